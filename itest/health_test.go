//go:build kafka

package itest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// metricsAddrOf returns the address a `replicate -v --metrics-addr
// 127.0.0.1:0` process logged it serves on, "" before it did.
func metricsAddrOf(p *mirrorProc) string {
	const key = `msg="serving metrics" addr=`
	out := p.stderr.String()
	i := strings.Index(out, key)
	if i < 0 {
		return ""
	}
	rest := out[i+len(key):]
	if j := strings.IndexAny(rest, " \n"); j >= 0 {
		return rest[:j]
	}
	return ""
}

// httpGet returns the status code and body of GET addr+path, bounded by
// ctx and 3 s; code 0 with the error as body when it got no answer.
func httpGet(ctx context.Context, addr, path string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestClusterOutagesOnRealKafka: a `replicate` process
// (mirrorctl.health.unreachable.grace.ms = 3000) copying a topic; the
// target cluster is stopped (scripts/kafka.sh stop eu-west) while records
// arrive on the source, then started again; then the same for the source.
// During each outage /readyz answers 503 naming the cluster once the grace
// has passed, mirrorctl_cluster_reachable{cluster=<it>} is 0 and the log
// has one warning saying it is unreachable; during the source's,
// mirrorctl_records_behind of the partition is absent (unknown), not a stale
// figure. After each, /readyz is 200 again, the gauge 1, and the log gives
// the outage's length. Nothing is lost. Before: /readyz 200 throughout,
// records_behind 0 while nothing was copied, no log line for the outage.
func TestClusterOutagesOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const parts = 2
	topic, cfg, east := lifecycleFlow(ctx, t, "reach", parts, "mirrorctl.health.unreachable.grace.ms = 3000\n")
	remote := "us-east." + topic
	p := replicateStarterArgs(t, cfg, "--metrics-addr", "127.0.0.1:0")("replicate")
	n := 0
	produceSeq(ctx, t, east, topic, parts, n, n+200)
	n += 200

	var addr string
	pollUntil(ctx, t, time.Minute, "the metrics address logged", func(context.Context) (bool, string) {
		addr = metricsAddrOf(p)
		return addr != "", "not logged yet"
	})
	gauge := func(body, cluster string) string {
		m := regexp.MustCompile(`(?m)^mirrorctl_cluster_reachable\{cluster="` + cluster + `"\} (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			return "absent"
		}
		return m[1]
	}
	behindRe := regexp.MustCompile(`(?m)^mirrorctl_records_behind\{partition="(\d+)",source="us-east",target="eu-west",topic="` + regexp.QuoteMeta(remote) + `"\} (\S+)$`)
	behind := func(body string) map[string]string {
		out := map[string]string{}
		for _, m := range behindRe.FindAllStringSubmatch(body, -1) {
			out[m[1]] = m[2]
		}
		return out
	}
	settled := func(what string) {
		t.Helper()
		pollUntil(ctx, t, 2*time.Minute, what, func(ctx context.Context) (bool, string) {
			code, ready := httpGet(ctx, addr, "/readyz")
			_, body := httpGet(ctx, addr, "/metrics")
			b := behind(body)
			ok := code == 200 && gauge(body, usEast) == "1" && gauge(body, euWest) == "1" && b["0"] == "0" && b["1"] == "0"
			return ok, fmt.Sprintf("/readyz %d %q, reachable us-east %s eu-west %s, records_behind %v", code, strings.TrimSpace(ready), gauge(body, usEast), gauge(body, euWest), b)
		})
	}
	settled("ready, both clusters reachable, nothing behind")

	for _, down := range []string{euWest, usEast} {
		startLine := "cluster unreachable cluster=" + down + " "
		endLine := regexp.MustCompile(`cluster reachable again cluster=` + down + ` unreachable_for=(\S+)`)
		runScript(ctx, t, "stop", down)
		stopped := time.Now()
		t.Cleanup(func() { _, _ = tryScript(context.Background(), "start", down) })
		if down == euWest {
			produceSeq(ctx, t, east, topic, parts, n, n+300) // copied once the target is back
			n += 300
		}
		var ready, body string
		pollUntil(ctx, t, time.Minute, "/readyz 503 naming "+down, func(ctx context.Context) (bool, string) {
			var code int
			code, ready = httpGet(ctx, addr, "/readyz")
			return code == 503 && strings.Contains(ready, "cluster "+down+" unreachable since "), fmt.Sprintf("/readyz %d %q", code, strings.TrimSpace(ready))
		})
		t.Logf("%s stopped: /readyz 503 after %s: %s", down, time.Since(stopped).Round(100*time.Millisecond), strings.TrimSpace(ready))
		if !strings.Contains(ready, "over the 3s grace") {
			t.Errorf("/readyz body %q does not give the 3 s grace", ready)
		}
		_, body = httpGet(ctx, addr, "/metrics")
		if g := gauge(body, down); g != "0" {
			t.Errorf("%s down: mirrorctl_cluster_reachable %s, want 0", down, g)
		}
		b := behind(body)
		switch down {
		case usEast:
			if len(b) != 0 {
				t.Errorf("source down: records_behind still exported: %v", b)
			}
		case euWest:
			if len(b) != parts {
				t.Errorf("target down: records_behind %v, want both partitions (the source's end offsets are known)", b)
			}
		}
		if c := strings.Count(p.stderr.String(), startLine); c != 1 {
			t.Errorf("%s down: %d %q lines, want 1", down, c, startLine)
		}

		runScript(ctx, t, "start", down)
		restarted := time.Now()
		pollUntil(ctx, t, 2*time.Minute, "/readyz 200 and the outage's end logged for "+down, func(ctx context.Context) (bool, string) {
			code, ready := httpGet(ctx, addr, "/readyz")
			return code == 200 && endLine.MatchString(p.stderr.String()), fmt.Sprintf("/readyz %d %q", code, strings.TrimSpace(ready))
		})
		m := endLine.FindStringSubmatch(p.stderr.String())
		t.Logf("%s started: /readyz 200 after %s; logged outage length %s (stopped for %s)", down, time.Since(restarted).Round(100*time.Millisecond), m[1], time.Since(stopped).Round(100*time.Millisecond))
		if d, err := time.ParseDuration(m[1]); err != nil || d <= 0 {
			t.Errorf("outage length %q is not a positive duration", m[1])
		}
		settled("ready again after " + down + "'s outage, nothing behind")
	}
	var lines []string
	for _, l := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(l, "cluster unreachable") || strings.Contains(l, "cluster reachable again") || strings.Contains(l, "partition task") || strings.Contains(l, "lost") {
			lines = append(lines, l)
		}
	}
	t.Logf("the process's reachability and task lines:\n%s", strings.Join(lines, "\n"))
	awaitSeq(ctx, t, remote, parts, n, false)
	if dups := checkSeq(ctx, t, remote, parts, n, false); dups > 0 {
		t.Logf("%d records copied twice (at least once)", dups)
	}
}
