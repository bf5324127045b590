package cmdutil

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// EnumValue is a pflag.Value that accepts only one of a fixed set of strings
// (compared case-insensitively, stored as the canonical spelling).
type EnumValue struct {
	p       *string
	options []string
}

// NewEnumValue returns an EnumValue storing into p, which it sets to def.
func NewEnumValue(p *string, def string, options []string) *EnumValue {
	*p = def
	return &EnumValue{p: p, options: options}
}

// Set implements pflag.Value. An unknown value returns an error listing the
// valid ones; cobra turns it into a usage error (exit 2).
func (e *EnumValue) Set(s string) error {
	for _, o := range e.options {
		if strings.EqualFold(s, o) {
			*e.p = o
			return nil
		}
	}
	return fmt.Errorf("valid values are {%s}", strings.Join(e.options, "|"))
}

// String implements pflag.Value.
func (e *EnumValue) String() string { return *e.p }

// Type implements pflag.Value; it shows as the placeholder in help.
func (e *EnumValue) Type() string { return "string" }

// StringEnumFlag defines a string flag on fs (cmd.Flags() or
// cmd.PersistentFlags()) that accepts only options, lists them in its help
// ("Output format: {table|json|csv}") and completes them in every shell.
// shorthand may be "". It follows cli/cli's cmdutil.StringEnumFlag.
func StringEnumFlag(cmd *cobra.Command, fs *pflag.FlagSet, p *string, name, shorthand, def string, options []string, usage string) *pflag.Flag {
	usage = fmt.Sprintf("%s: {%s}", usage, strings.Join(options, "|"))
	f := fs.VarPF(NewEnumValue(p, def, options), name, shorthand, usage)
	opts := slices.Clone(options)
	_ = cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return opts, cobra.ShellCompDirectiveNoFileComp
	})
	return f
}

// GroupRunE is the RunE of a command that only groups subcommands (such as
// `config`). Without arguments it prints the group's help and succeeds; with
// one it returns a *FlagError (exit 2) naming the unknown subcommand and
// suggesting near matches, instead of cobra's default of printing help and
// exiting 0.
func GroupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra sets this on the root only
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
	}
	return FlagErrorf("%s", msg)
}
