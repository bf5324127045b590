package testkit

import (
	"math/rand/v2"
	"reflect"
	"time"
)

// fillStrings are the strings Fill picks from: empty ones (omitempty),
// plain names, and every kind of character a JSON writer escapes or leaves
// alone differently (quotes, backslashes, control, C1 and bidirectional
// characters, U+2028, HTML characters, invalid UTF-8, non-ASCII text).
var fillStrings = []string{
	"", "", "orders", "us-east.orders", "g-00042", `quote " and \ backslash`, "tab\tnew\nline\r", "\x00\x1f\x7f",
	"c1 \u0085 bidi \u202e\u2066 end", "line sep \u2028 para \u2029", "<html> & 'amp'", "bad \xff\xfe utf8", "ünïcödé 日本",
}

// Fill sets every exported field reachable from ptr (a pointer to a struct,
// slice, or scalar) to a value drawn from r: strings from a set that
// exercises JSON escaping, numbers including zero and negatives, pointers
// nil about a third of the time, slices of 0 to 3 elements (nil or empty
// sometimes), times with and without nanoseconds. Maps and interfaces are
// left alone. It is for tests that compare two encoders of the same value.
func Fill(r *rand.Rand, ptr any) {
	fill(r, reflect.ValueOf(ptr).Elem(), 0)
}

var timeType = reflect.TypeFor[time.Time]()

func fill(r *rand.Rand, v reflect.Value, depth int) {
	if v.Type() == timeType {
		t := time.Unix(r.Int64N(4e9), 0).UTC()
		if r.IntN(2) == 0 {
			t = t.Add(time.Duration(r.Int64N(1e9)))
		}
		if r.IntN(4) == 0 {
			t = time.Time{}
		}
		v.Set(reflect.ValueOf(t))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fillStrings[r.IntN(len(fillStrings))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		switch r.IntN(4) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(-1)
		default:
			v.SetInt(r.Int64N(1 << min(v.Type().Bits()-1, 50)))
		}
	case reflect.Pointer:
		if r.IntN(3) == 0 || depth > 6 {
			v.SetZero()
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(r, v.Elem(), depth+1)
	case reflect.Slice:
		n := r.IntN(4)
		if n == 0 {
			if r.IntN(2) == 0 {
				v.SetZero()
			} else {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i), depth+1)
			}
		}
	}
}
