package mirrorctl.harness;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/**
 * Runs MirrorMaker 2's own RemoteClusterUtils.translateOffsets against the
 * cluster at --bootstrap (the target of the flow) and prints the result as
 * JSON lines sorted by topic, then partition:
 *
 * <pre>
 * {"topic":"us-east.orders","partition":0,"offset":42,"metadata":""}
 * </pre>
 *
 * Usage: TranslateOffsets --bootstrap host:port --source-alias A --group G
 * [--client-config file] [--timeout-ms 30000]. The source alias names the
 * checkpoints topic read (A.checkpoints.internal). Exit 1 on failure.
 */
public final class TranslateOffsets {
    private static final String USAGE = "TranslateOffsets --bootstrap host:port --source-alias A --group G"
        + " [--client-config file] [--timeout-ms ms]";

    public static void main(String[] args) throws Exception {
        Map<String, String> f = Clients.flags(args, USAGE,
            "bootstrap", "source-alias", "group", "client-config", "timeout-ms");
        for (String req : new String[] {"bootstrap", "source-alias", "group"}) {
            if (f.get(req) == null) {
                Clients.usage(USAGE, "--" + req + " is required");
            }
        }
        Map<String, Object> props = Clients.config(f);
        Map<TopicPartition, OffsetAndMetadata> got;
        try {
            got = RemoteClusterUtils.translateOffsets(props, f.get("source-alias"), f.get("group"),
                Duration.ofMillis(Clients.millis(f, "timeout-ms", 30_000)));
        } catch (Exception e) {
            System.err.println("translateOffsets(" + f.get("source-alias") + ", group " + f.get("group")
                + ") on " + f.get("bootstrap") + " failed: " + e);
            System.exit(1);
            return;
        }
        List<Map.Entry<TopicPartition, OffsetAndMetadata>> rows = new ArrayList<>(got.entrySet());
        rows.sort(Comparator.comparing((Map.Entry<TopicPartition, OffsetAndMetadata> e) -> e.getKey().topic())
            .thenComparingInt(e -> e.getKey().partition()));
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : rows) {
            String md = e.getValue().metadata() == null ? "" : e.getValue().metadata();
            System.out.println("{\"topic\":" + Clients.json(e.getKey().topic())
                + ",\"partition\":" + e.getKey().partition()
                + ",\"offset\":" + e.getValue().offset()
                + ",\"metadata\":" + Clients.json(md) + "}");
        }
    }
}
