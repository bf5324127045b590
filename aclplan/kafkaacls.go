package aclplan

import (
	"fmt"
	"io"
	"strings"
)

// kafkaACLsOps maps operations to kafka-acls.sh --operation values.
var kafkaACLsOps = map[string]string{
	OpAll: "All", OpRead: "Read", OpWrite: "Write", OpCreate: "Create", OpDelete: "Delete", OpAlter: "Alter",
	OpDescribe: "Describe", OpAlterConfigs: "AlterConfigs", OpDescribeConfigs: "DescribeConfigs",
}

// CommandConfig returns the placeholder file name used for --command-config
// in [WriteKafkaACLs]: "<alias>-admin.properties".
func CommandConfig(alias string) string { return alias + "-admin.properties" }

// WriteKafkaACLs writes plan as ready-to-run kafka-acls.sh command lines,
// one binding per line (--add --allow-principal --allow-host '*'
// --operation --<resource> --resource-pattern-type), preceded by '#'
// comment lines: the notes, and for each cluster the placeholder
// --command-config file to replace with an admin client config for that
// cluster. bootstrap maps a cluster alias to its bootstrap.servers; a
// missing alias prints "<alias>-bootstrap:9092". Every argument is shell
// quoted where needed.
func WriteKafkaACLs(w io.Writer, plan *Plan, bootstrap map[string]string) error {
	var b strings.Builder
	for _, n := range plan.Notes {
		level := strings.ToUpper(n.Level)
		if n.Flow != "" {
			fmt.Fprintf(&b, "# %s (%s): %s\n", level, n.Flow, n.Text)
		} else {
			fmt.Fprintf(&b, "# %s: %s\n", level, n.Text)
		}
	}
	last := ""
	for _, bd := range plan.Bindings {
		if bd.Cluster != last {
			last = bd.Cluster
			fmt.Fprintf(&b, "# cluster %s: replace %s with a client config for an admin of %s\n", bd.Cluster, CommandConfig(bd.Cluster), bd.Cluster)
		}
		b.WriteString(KafkaACLsLine(bd, bootstrap[bd.Cluster]))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// KafkaACLsLine returns the kafka-acls.sh command that adds bd, e.g.
//
//	kafka-acls.sh --bootstrap-server b:9092 --command-config us-east-admin.properties --add --allow-principal User:mm2 --allow-host '*' --operation Read --topic orders. --resource-pattern-type prefixed
//
// An empty bootstrap prints "<cluster>-bootstrap:9092".
func KafkaACLsLine(bd Binding, bootstrap string) string {
	if bootstrap == "" {
		bootstrap = bd.Cluster + "-bootstrap:9092"
	}
	args := []string{"kafka-acls.sh", "--bootstrap-server", bootstrap, "--command-config", CommandConfig(bd.Cluster), "--add"}
	if bd.Permission == Allow {
		args = append(args, "--allow-principal", bd.Principal, "--allow-host", bd.Host)
	} else {
		args = append(args, "--deny-principal", bd.Principal, "--deny-host", bd.Host)
	}
	op := kafkaACLsOps[bd.Operation]
	if op == "" {
		op = bd.Operation
	}
	args = append(args, "--operation", op)
	switch bd.ResourceType {
	case TypeCluster:
		args = append(args, "--cluster")
	case TypeGroup:
		args = append(args, "--group", bd.ResourceName)
	case TypeTransactionalID:
		args = append(args, "--transactional-id", bd.ResourceName)
	default:
		args = append(args, "--topic", bd.ResourceName)
	}
	if bd.ResourceType != TypeCluster {
		args = append(args, "--resource-pattern-type", strings.ToLower(bd.PatternType))
	}
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

// shellQuote returns s unchanged when it holds only characters no POSIX
// shell treats specially, else s in single quotes.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/@=+%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
