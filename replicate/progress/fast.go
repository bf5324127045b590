package progress

// parseKey parses a key in the exact form EncodeValue writes,
// {"topic":"<name>","partition":<n>}, with a name of printable ASCII that
// needs no escape. ok is false for anything else: the caller then decodes
// with encoding/json, which gives the same Key for every input parsed here
// (FuzzParseMatchesJSON).
func parseKey(b []byte) (k Key, ok bool) {
	if b, ok = cut(b, `{"topic":`); !ok {
		return Key{}, false
	}
	if k.Topic, b, ok = plainString(b); !ok {
		return Key{}, false
	}
	if b, ok = cut(b, `,"partition":`); !ok {
		return Key{}, false
	}
	n, b, ok := integer(b, 32)
	if !ok || string(b) != "}" {
		return Key{}, false
	}
	k.Partition = int32(n)
	return k, true
}

// parseValue parses a value in the exact form EncodeValue writes without a
// loss event: {"offset":<n>,"time_ms":<n>} with, in this order, the optional
// "topic_id", "skipped", "source_end" and "downstream" fields. ok is false for anything else (a loss
// event included): the caller then decodes with encoding/json.
func parseValue(b []byte) (v value, ok bool) {
	if b, ok = cut(b, `{"offset":`); !ok {
		return value{}, false
	}
	off, b, ok := integer(b, 64)
	if !ok {
		return value{}, false
	}
	v.Offset = &off
	if b, ok = cut(b, `,"time_ms":`); !ok {
		return value{}, false
	}
	if v.TimeMs, b, ok = integer(b, 64); !ok {
		return value{}, false
	}
	if rest, found := cut(b, `,"topic_id":`); found {
		if v.TopicID, b, ok = plainString(rest); !ok {
			return value{}, false
		}
	}
	if rest, found := cut(b, `,"skipped":`); found {
		if v.Skipped, b, ok = integer(rest, 64); !ok {
			return value{}, false
		}
	}
	if rest, found := cut(b, `,"source_end":`); found {
		if v.SourceEnd, b, ok = integer(rest, 64); !ok {
			return value{}, false
		}
	}
	if rest, found := cut(b, `,"downstream":`); found {
		if v.Downstream, b, ok = integer(rest, 64); !ok {
			return value{}, false
		}
	}
	if string(b) != "}" {
		return value{}, false
	}
	return v, true
}

// cut returns b after prefix, and whether b starts with it.
func cut(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}

// plainString parses a JSON string of printable ASCII other than '"' and
// '\\' (so nothing escaped), and returns it and what follows it.
func plainString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", b, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return string(b[1:i]), b[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", b, false
		}
	}
	return "", b, false
}

// integer parses a JSON integer (no leading zero, no fraction or exponent)
// that fits in a signed integer of bits bits, and returns it and what
// follows it. It allocates nothing.
func integer(b []byte, bits int) (int64, []byte, bool) {
	i, neg := 0, false
	if i < len(b) && b[i] == '-' {
		i, neg = i+1, true
	}
	limit := uint64(1)<<(bits-1) - 1 // the largest value; its negative - 1 is allowed too
	if neg {
		limit++
	}
	start := i
	var n uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if n > (limit-d)/10 {
			return 0, b, false // out of range
		}
		n = n*10 + d
	}
	switch {
	case i == start, b[start] == '0' && i > start+1:
		return 0, b, false
	case i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'):
		return 0, b, false
	}
	if neg {
		return -int64(n), b[i:], true // -(1<<63) wraps to itself, as it should
	}
	return int64(n), b[i:], true
}
