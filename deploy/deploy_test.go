package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mirrorctl/mirrorctl/internal/config"
)

// k8sObject is the part of a Kubernetes object the checks read.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`       // ConfigMap
	StringData map[string]string `yaml:"stringData"` // Secret
	Spec       struct {
		Replicas *int `yaml:"replicas"`
		Template struct {
			Spec struct {
				Containers []container `yaml:"containers"`
				Volumes    []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
					Secret *struct {
						SecretName string `yaml:"secretName"`
						Items      []struct {
							Key  string `yaml:"key"`
							Path string `yaml:"path"`
						} `yaml:"items"`
					} `yaml:"secret"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
			FieldRef struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"` // a name or a number
	} `yaml:"httpGet"`
}

// readManifests decodes every YAML document of path (a syntax error anywhere
// fails) and returns them by kind; each must have apiVersion, kind and name.
func readManifests(t *testing.T, path string) map[string]k8sObject {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]k8sObject{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for i := 0; ; i++ {
		var node yaml.Node
		if err := dec.Decode(&node); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s document %d: %v", path, i+1, err)
		}
		var o k8sObject
		if err := node.Decode(&o); err != nil {
			t.Fatalf("%s document %d: %v", path, i+1, err)
		}
		if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
			t.Fatalf("%s document %d lacks apiVersion, kind or metadata.name", path, i+1)
		}
		objs[o.Kind] = o
	}
	return objs
}

func TestKubernetesManifests(t *testing.T) {
	objs := readManifests(t, filepath.Join("kubernetes", "mirrorctl.yaml"))
	for _, kind := range []string{"ConfigMap", "Secret", "Deployment", "Service"} {
		if _, ok := objs[kind]; !ok {
			t.Fatalf("no %s in kubernetes/mirrorctl.yaml", kind)
		}
	}
	cm, secret, dep := objs["ConfigMap"], objs["Secret"], objs["Deployment"]

	if dep.APIVersion != "apps/v1" || dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("Deployment: apiVersion %q replicas %v; want apps/v1 and N>1 replicas", dep.APIVersion, dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	wantArgs := []string{"replicate", "-c", "/etc/mirrorctl/mm2.properties", "--metrics-addr", ":9464"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q, want %q", c.Args, wantArgs)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9464 || c.Ports[0].Name != "metrics" {
		t.Errorf("ports %+v, want metrics 9464", c.Ports)
	}
	// The paths are those internal/metrics serves (metrics.Handler).
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Port != "metrics" {
		t.Errorf("livenessProbe %+v, want GET /healthz on the metrics port", c.LivenessProbe)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port != "metrics" {
		t.Errorf("readinessProbe %+v, want GET /readyz on the metrics port", c.ReadinessProbe)
	}

	// The config file comes from the ConfigMap at the path -c names.
	mounts := map[string]string{} // volume -> mount path (+ subPath)
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
		if m.SubPath != "" && !strings.HasSuffix(m.MountPath, "/"+m.SubPath) {
			t.Errorf("mount %s: path %s does not end in its subPath %s", m.Name, m.MountPath, m.SubPath)
		}
	}
	var secretDir string
	var secretFiles []string
	for _, v := range pod.Volumes {
		switch {
		case v.ConfigMap != nil:
			if v.ConfigMap.Name != cm.Metadata.Name || mounts[v.Name] != "/etc/mirrorctl/mm2.properties" {
				t.Errorf("config volume %s: ConfigMap %q mounted at %q", v.Name, v.ConfigMap.Name, mounts[v.Name])
			}
		case v.Secret != nil:
			if v.Secret.SecretName != secret.Metadata.Name {
				t.Errorf("secret volume %s names Secret %q, the file defines %q", v.Name, v.Secret.SecretName, secret.Metadata.Name)
			}
			secretDir = mounts[v.Name]
			for _, it := range v.Secret.Items {
				if _, ok := secret.StringData[it.Key]; !ok {
					t.Errorf("secret volume item %q is not a key of the Secret", it.Key)
				}
				secretFiles = append(secretFiles, it.Path)
			}
		}
	}
	if secretDir == "" {
		t.Fatal("no Secret volume mounted")
	}

	// Lay the Secret out as the kubelet would, with the Deployment's env
	// from the Secret, and load the ConfigMap's mm2.properties against it:
	// every ${env:...} and ${file:...} reference must resolve.
	dir := t.TempDir()
	for _, it := range secretFiles {
		if err := os.WriteFile(filepath.Join(dir, it), []byte(secret.StringData[it]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.Name == "MIRRORCTL_INSTANCE_ID" {
			// Each pod's own name: static membership that a container
			// restart keeps (replicate's --instance-id).
			if e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
				t.Errorf("env MIRRORCTL_INSTANCE_ID: fieldRef %q, want metadata.name (one id per pod)", e.ValueFrom.FieldRef.FieldPath)
			}
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		v, ok := secret.StringData[ref.Key]
		if ref.Name != secret.Metadata.Name || !ok {
			t.Errorf("env %s: secretKeyRef %s/%s is not in the Secret", e.Name, ref.Name, ref.Key)
		}
		env[e.Name] = v
	}
	props, ok := cm.Data["mm2.properties"]
	if !ok {
		t.Fatal("ConfigMap has no mm2.properties")
	}
	if strings.Contains(props, "change-me") {
		t.Error("the ConfigMap holds a secret value; it must come from the Secret")
	}
	props = strings.ReplaceAll(props, secretDir, filepath.ToSlash(dir))
	cfg, err := config.Parse("mm2.properties (ConfigMap)", strings.NewReader(props), config.WithEnv(func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}))
	if err != nil {
		t.Fatalf("the ConfigMap's mm2.properties does not load: %v", err)
	}
	for _, w := range cfg.Warnings {
		t.Errorf("config warning: %v", w)
	}
	// Every replica must be admitted to copy: tasks.max is the most
	// processes a flow admits, the others wait as standbys.
	for _, f := range cfg.Flows {
		if f.Enabled && dep.Spec.Replicas != nil && f.Int("tasks.max") < int64(*dep.Spec.Replicas) {
			t.Errorf("flow %s: tasks.max %d is below the Deployment's %d replicas: the extra replicas only stand by", f.Name(), f.Int("tasks.max"), *dep.Spec.Replicas)
		}
	}
}

// unitFile is a systemd unit: section -> key -> values (keys may repeat).
type unitFile map[string]map[string][]string

// parseUnit reads the systemd.syntax(7) subset a unit file uses: [Section]
// headers, Key=Value lines, '#' and ';' comments, blank lines. A line
// outside a section, or without '=', is an error naming its line.
func parseUnit(r io.Reader) (unitFile, error) {
	u := unitFile{}
	var section string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "", strings.HasPrefix(line, "#"), strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.HasSuffix(line, `\`) {
				return nil, errors.New("line " + strconv.Itoa(n) + ": not Key=Value inside a [Section]: " + line)
			}
			k = strings.TrimSpace(k)
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	return u, sc.Err()
}

func TestSystemdUnit(t *testing.T) {
	f, err := os.Open(filepath.Join("systemd", "mirrorctl.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := parseUnit(f)
	if err != nil {
		t.Fatalf("mirrorctl.service: %v", err)
	}
	for _, s := range []string{"Unit", "Service", "Install"} {
		if u[s] == nil {
			t.Fatalf("mirrorctl.service has no [%s] section", s)
		}
	}
	svc := u["Service"]
	want := map[string]string{
		"ExecStart":         "/usr/local/bin/mirrorctl replicate -c /etc/mirrorctl/mm2.properties --metrics-addr :9464",
		"KillSignal":        "SIGTERM",
		"SuccessExitStatus": "130", // replicate's exit code after SIGTERM (help exit-codes)
		"Restart":           "on-failure",
	}
	for k, v := range want {
		if got := svc[k]; len(got) != 1 || got[0] != v {
			t.Errorf("[Service] %s = %q, want exactly %q", k, got, v)
		}
	}
	if got := u["Install"]["WantedBy"]; len(got) != 1 || got[0] != "multi-user.target" {
		t.Errorf("[Install] WantedBy = %q", got)
	}
	if _, err := parseUnit(strings.NewReader("Key=outside\n")); err == nil {
		t.Error("parseUnit accepted a key outside any section")
	}
}
