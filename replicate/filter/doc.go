// Package filter decides which topics, consumer groups and topic configs
// MirrorMaker 2 mirrors.
//
// The key types are:
//   - [Pattern], a compiled MM2 regex list (MirrorUtils.compilePatternList);
//   - [TopicFilter], [GroupFilter] and [ConfigPropertyFilter], the
//     DefaultTopicFilter, DefaultGroupFilter and DefaultConfigPropertyFilter of MM2;
//   - [Decision], the outcome of [DecideTopic] (MirrorSourceConnector.shouldReplicateTopic)
//     with the reason a topic is skipped.
//
// A list value such as "topics" is a Kafka ConfigDef LIST: trimmed and split on
// commas (with surrounding spaces). The items are joined with "|" into one
// regex that must match the whole name. A blank list matches nothing. Because
// the split happens before the regex is parsed, a quantifier like {1,3} is cut
// in two; CompileList reports that with a hint. Patterns are compiled with Go's
// RE2, which has no look-around, backreferences, atomic groups or possessive
// quantifiers; such items are rejected with a clear message.
package filter
