package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error it returns is
// an *Error, and that the getters work on whatever it accepts. It is
// seeded with the testdata samples and a few syntax corner cases.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/config/*.properties")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{
		"clusters = a, b\na->b.enabled = true\n",
		"clusters=a\\\n,b\r\na.x=\\u00",
		"clusters = a\na->a.topics = (\n",
		"clusters = a, b\nreplication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\nbootstrap.servers=x\na->b.enabled=true\nb->a.enabled=true\nb->a.topics=x{2}y+|[a-c]?\n",
		"=\n:\n\\\n#\\\n!",
		"clusters = ${env:X}\nconfig.providers=env\nconfig.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider\n",
	} {
		f.Add(s)
	}
	env := WithEnv(func(k string) (string, bool) { return "v-" + k, len(k)%2 == 0 })
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse("fuzz.properties", strings.NewReader(text), env)
		if err != nil {
			j, ok := err.(interface{ Unwrap() []error })
			if !ok {
				t.Fatalf("error not joined: %v", err)
			}
			for _, e := range j.Unwrap() {
				var ce *Error
				if !errors.As(e, &ce) {
					t.Fatalf("not an *Error: %v", e)
				}
			}
		}
		if c == nil {
			return
		}
		_ = c.Digest()
		for _, fl := range c.Flows {
			_ = fl.Settings()
			_ = fl.Policy().FormatRemoteTopic(fl.Source, "t")
			_ = fl.TopicFilter().Accept("t")
			_ = fl.Duration("emit.checkpoints.interval.seconds")
		}
	})
}
