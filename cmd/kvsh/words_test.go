package main

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shale-db/shale"
)

func TestSplitLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  string
	}{
		{line: "", want: nil},
		{line: "  put  a\tb  ", want: []string{"put", "a", "b"}},
		{line: `put "a b" "c  d"`, want: []string{"put", "a b", "c  d"}},
		{line: `get a"b c"d`, want: []string{"get", "ab cd"}},
		{line: `get ""`, want: []string{"get", ""}},
		{line: `put \x00\x7f\xFF "\n\r\t\\\""`, want: []string{"put", "\x00\x7f\xff", "\n\r\t\\\""}},
		{line: `put "a`, err: `unterminated quote: close it with "`},
		{line: `put a\`, err: `line ends with a lone \`},
		{line: `put \q`, err: `unknown escape \q (use \n \r \t \\ \" or \xHH)`},
		{line: `put \x4`, err: `bad escape \x4: \x takes two hex digits`},
		{line: `put \xzz b`, err: `bad escape \xzz: \x takes two hex digits`},
	} {
		words, err := splitLine(tc.line)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("splitLine(%q): error %v, want %s", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("splitLine(%q): %v", tc.line, err)
			continue
		}
		var got []string
		for _, w := range words {
			got = append(got, w.text)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("splitLine(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestSplitLineLiteral(t *testing.T) {
	words, err := splitLine(`scan limit=5 "limit=5" limit\x3d5`)
	if err != nil {
		t.Fatal(err)
	}
	var literal []bool
	for _, w := range words {
		literal = append(literal, w.literal)
	}
	if want := []bool{false, false, true, true}; !slices.Equal(literal, want) {
		t.Errorf("literal = %v, want %v", literal, want)
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[string]string{
		"abc":         "abc",
		"user:1=x":    "user:1=x",
		"":            `""`,
		"a b":         `"a b"`,
		"a\x00\xffz":  `"a\x00\xffz"`,
		"q\"\\\n\r\t": `"q\"\\\n\r\t"`,
		"é":           `"\xc3\xa9"`,
		"\x7f":        `"\x7f"`,
		`(not found)`: `"(not found)"`,
	} {
		if got := shale.FormatKey([]byte(in)); got != want {
			t.Errorf("shale.FormatKey(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestFormatRoundTrip checks that what kvsh prints reads back as the same
// bytes, for random byte strings.
func TestFormatRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		s := shale.FormatKey(b)
		words, err := splitLine("get " + s)
		if err != nil || len(words) != 2 || words[1].text != string(b) {
			t.Fatalf("%q printed as %s reads back as %v, %v", b, s, words, err)
		}
	}
}
