package config

import (
	"os"
	"strings"
	"testing"
)

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("../../testdata/config/active-active-sasl.properties")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Parse("b", strings.NewReader(string(data)), exampleEnv); err != nil {
			b.Fatal(err)
		}
	}
}
