package mirrorctl.harness;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/** Shared argument and client-config handling for the harness helper programs. */
final class Clients {
    private Clients() {
    }

    /**
     * Parses "--name value" pairs. Unknown or dangling flags are usage errors
     * (exit status 2), reported by flag name only.
     */
    static Map<String, String> flags(String[] args, String usage, String... known) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            boolean ok = false;
            for (String k : known) {
                if (a.equals("--" + k)) {
                    ok = true;
                    break;
                }
            }
            if (!ok || i + 1 >= args.length) {
                usage(usage, ok ? "flag " + a + " needs a value" : "unknown argument " + a);
            }
            out.put(a.substring(2), args[++i]);
        }
        return out;
    }

    static void usage(String usage, String why) {
        System.err.println(why);
        System.err.println("usage: " + usage);
        System.exit(2);
    }

    /**
     * Client properties: bootstrap.servers from --bootstrap plus, when
     * --client-config names a file, every key in it (security.protocol, sasl.*,
     * ssl.*). Values are never printed: the file may hold passwords.
     */
    static Map<String, Object> config(Map<String, String> f) throws IOException {
        Map<String, Object> props = new HashMap<>();
        String file = f.get("client-config");
        if (file != null) {
            Properties p = new Properties();
            try (InputStream in = new FileInputStream(file)) {
                p.load(in);
            }
            for (String k : p.stringPropertyNames()) {
                props.put(k, p.getProperty(k));
            }
        }
        props.put("bootstrap.servers", f.get("bootstrap"));
        return props;
    }

    static long millis(Map<String, String> f, String key, long def) {
        String v = f.get(key);
        if (v == null) {
            return def;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            usage("--" + key + " <ms>", "--" + key + " is not a whole number of milliseconds: " + v);
            return def;
        }
    }

    /** Quotes s as a JSON string. */
    static String json(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }
}
