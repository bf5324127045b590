//go:build kafka

package itest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/cli/status"
)

// TestStatusAcrossProcessesOnRealKafka: two `replicate` processes share a
// six-partition flow (tasks.max 2). Their /metrics together export each
// partition's mirrorctl_partition_up and mirrorctl_records_behind exactly
// once, from the process that copies it; `mirrorctl status -o json`, read
// from the brokers alone, lists both processes, one leader, every partition
// owned by the process whose metrics export it, at the source end with
// nothing behind, and exits 0. Both stopped, status exits 3 naming the
// group without members.
func TestStatusAcrossProcessesOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const parts, n = 6, 200
	topic, cfg, east := lifecycleFlow(ctx, t, "status", parts, "tasks.max = 2\nus-east.consumer.session.timeout.ms = 6000\neu-west.consumer.session.timeout.ms = 6000\n")
	remote := "us-east." + topic
	produceSeq(ctx, t, east, topic, parts, 0, n)
	start := replicateStarterArgs(t, cfg, "--metrics-addr", "127.0.0.1:0")
	procs := []*mirrorProc{start("a"), start("b")}
	addrs := make([]string, len(procs))
	pollUntil(ctx, t, time.Minute, "both metrics addresses logged", func(context.Context) (bool, string) {
		for i, p := range procs {
			addrs[i] = metricsAddrOf(p)
		}
		return addrs[0] != "" && addrs[1] != "", fmt.Sprintf("%q", addrs)
	})
	series := func(ctx context.Context, addr, name string) map[string]string {
		_, body := httpGet(ctx, addr, "/metrics")
		re := regexp.MustCompile(`(?m)^` + name + `\{partition="(\d+)",source="us-east",target="eu-west",topic="` + regexp.QuoteMeta(remote) + `"\} (\S+)$`)
		out := map[string]string{}
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			out[m[1]] = m[2]
		}
		return out
	}
	exporter := map[string]int{} // partition -> index of the process exporting it
	pollUntil(ctx, t, 2*time.Minute, "each partition's series exported by exactly one process, nothing behind", func(ctx context.Context) (bool, string) {
		clear(exporter)
		count := map[string]int{}
		for i, addr := range addrs {
			up, behind := series(ctx, addr, "mirrorctl_partition_up"), series(ctx, addr, "mirrorctl_records_behind")
			for p, v := range up {
				count[p]++
				exporter[p] = i
				if v != "1" || behind[p] != "0" {
					return false, fmt.Sprintf("process %d: partition %s up %s, behind %q", i, p, v, behind[p])
				}
			}
			if len(behind) != len(up) {
				return false, fmt.Sprintf("process %d: partition_up for %d partitions, records_behind for %d", i, len(up), len(behind))
			}
		}
		for p := 0; p < parts; p++ {
			if count[fmt.Sprint(p)] != 1 {
				return false, fmt.Sprintf("exporters per partition %v", count)
			}
		}
		return len(count) == parts, fmt.Sprintf("exporters per partition %v", count)
	})
	t.Logf("partition -> process: %v", exporter)

	var res status.Result
	pollUntil(ctx, t, time.Minute, "status: two processes, every partition owned, at the end", func(ctx context.Context) (bool, string) {
		code, stdout, stderr := runCLI(ctx, "status", "-c", cfg, "-o", "json", "--timeout", "20s")
		res = status.Result{}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || len(res.Flows) != 1 {
			return false, fmt.Sprintf("exit %d, %v, stderr %s", code, err, stderr)
		}
		f := res.Flows[0]
		if len(f.Processes) != 2 || f.Leader == "" {
			return false, fmt.Sprintf("%d processes, leader %q", len(f.Processes), f.Leader)
		}
		// The flow also copies the heartbeats topics other tests left on
		// us-east (MM2 replicates heartbeats past the topic filter): every
		// partition has an owner, the test topic's are at its end with
		// their progress time.
		ours := 0
		for _, p := range f.Partitions {
			if p.Owner == "" {
				return false, fmt.Sprintf("%s[%d]: no owner", p.Topic, p.Partition)
			}
			if p.Topic != remote {
				continue
			}
			ours++
			if p.Position != n || p.RecordsBehind != 0 || p.ProgressTime == nil {
				return false, fmt.Sprintf("partition %d: owner %q position %d behind %d", p.Partition, p.Owner, p.Position, p.RecordsBehind)
			}
		}
		return ours == parts, fmt.Sprintf("%d partitions of %s", ours, remote)
	})
	f := res.Flows[0]
	// The process whose metrics export a partition is its owner in status:
	// client ids name the pid, "mirrorctl[<host>:<pid>]".
	pidOf := func(clientID string) string {
		i, j := strings.LastIndex(clientID, ":"), strings.LastIndex(clientID, "]")
		if i < 0 || j < i {
			return ""
		}
		return clientID[i+1 : j]
	}
	var pids []string
	for _, p := range procs {
		pids = append(pids, fmt.Sprint(p.cmd.Process.Pid))
	}
	for _, p := range f.Partitions {
		if p.Topic != remote {
			continue
		}
		if got, want := pidOf(p.Owner), pids[exporter[fmt.Sprint(p.Partition)]]; got != want {
			t.Errorf("partition %d: status owner %s (pid %s), metrics exported by pid %s", p.Partition, p.Owner, got, want)
		}
	}
	var roles []string
	for _, p := range f.Processes {
		roles = append(roles, fmt.Sprintf("%s %s leader=%v %d partitions", p.ClientID, p.Role, p.Leader, len(p.Partitions)))
	}
	sort.Strings(roles)
	t.Logf("status: %s", strings.Join(roles, "; "))

	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	}
	pollUntil(ctx, t, time.Minute, "status exits 3 naming the group without members", func(ctx context.Context) (bool, string) {
		code, _, stderr := runCLI(ctx, "status", "-c", cfg, "--timeout", "20s")
		return code == 3 && strings.Contains(stderr, "has no members"), fmt.Sprintf("exit %d, stderr %s", code, stderr)
	})
}
