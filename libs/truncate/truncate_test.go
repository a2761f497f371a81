package truncate

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		s     string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ..."},
		{"abcdef", 3, "..."},
		{"abcdef", 2, "ab"},
		{"abcdef", 0, ""},
		{"abcdef", -1, ""},
		// "é" is two bytes: the cut backs up to the rune's start.
		{"aaéaaaa", 6, "aa..."},
		{"日本語の文字列", 10, "日本..."},
	} {
		if got := String(tc.s, tc.limit); got != tc.want {
			t.Errorf("String(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
		}
	}
}

// Whatever the input, the result fits, is valid UTF-8 when the input is,
// and is a prefix of the input plus at most the marker.
func TestStringProperties(t *testing.T) {
	inputs := []string{"", "a", strings.Repeat("x", 100), strings.Repeat("é", 50), strings.Repeat("日本", 40) + "ascii"}
	for _, s := range inputs {
		for limit := 0; limit <= len(s)+2; limit++ {
			got := String(s, limit)
			if len(got) > limit {
				t.Fatalf("String(%q, %d) = %q: %d bytes", s, limit, got, len(got))
			}
			if !utf8.ValidString(got) {
				t.Fatalf("String(%q, %d) = %q: not valid UTF-8", s, limit, got)
			}
			if !strings.HasPrefix(s, strings.TrimSuffix(got, Marker)) {
				t.Fatalf("String(%q, %d) = %q: not a prefix", s, limit, got)
			}
			if len(s) <= limit && got != s {
				t.Fatalf("String(%q, %d) = %q: shortened a string that fits", s, limit, got)
			}
		}
	}
}
