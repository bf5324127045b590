package mirrorctl.harness;

import java.util.Collection;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.errors.AuthenticationException;

/**
 * Waits until a cluster answers a metadata request (Admin describeCluster,
 * i.e. a Metadata RPC) with at least one live broker.
 *
 * <pre>
 * WaitReady --bootstrap host:port [--client-config file] [--timeout-ms 90000] [--auth-fail-fast true]
 * </pre>
 *
 * Exit status 0 when ready, 1 when the deadline passed (the last error is
 * printed to stderr), 2 on bad arguments, and 3 with --auth-fail-fast true
 * at the first authentication failure (a SASL login refused), which retrying
 * would not change.
 */
public final class WaitReady {
    private static final String USAGE =
        "WaitReady --bootstrap host:port [--client-config file] [--timeout-ms ms] [--auth-fail-fast true]";

    public static void main(String[] args) throws Exception {
        Map<String, String> f = Clients.flags(args, USAGE, "bootstrap", "client-config", "timeout-ms", "auth-fail-fast");
        if (f.get("bootstrap") == null) {
            Clients.usage(USAGE, "--bootstrap is required");
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Clients.millis(f, "timeout-ms", 90_000));
        boolean authFailFast = "true".equals(f.get("auth-fail-fast"));
        Map<String, Object> props = Clients.config(f);
        props.put("request.timeout.ms", "3000");
        props.put("default.api.timeout.ms", "3000");
        props.put("socket.connection.setup.timeout.ms", "1000");
        props.put("socket.connection.setup.timeout.max.ms", "2000");
        props.put("reconnect.backoff.max.ms", "500");
        String last = "no attempt made";
        try (Admin admin = Admin.create(props)) {
            while (System.nanoTime() < deadline) {
                try {
                    Collection<Node> nodes = admin.describeCluster().nodes().get(3, TimeUnit.SECONDS);
                    if (!nodes.isEmpty()) {
                        System.out.println("ready: " + f.get("bootstrap") + " (" + nodes.size() + " broker(s))");
                        return;
                    }
                    last = "metadata lists no live broker";
                } catch (Exception e) {
                    Throwable c = e.getCause() != null ? e.getCause() : e;
                    last = c.getClass().getSimpleName() + ": " + c.getMessage();
                    if (authFailFast && c instanceof AuthenticationException) {
                        System.err.println("login refused: " + f.get("bootstrap") + ": " + last);
                        System.exit(3);
                    }
                }
                Thread.sleep(250);
            }
        }
        System.err.println("not ready: " + f.get("bootstrap") + ": " + last);
        System.exit(1);
    }
}
