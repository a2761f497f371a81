// Package truncate shortens the text Upshift writes into fields with a size
// limit: condition messages (32,768 bytes), Event notes (1,024 bytes), the
// API's own lastError and details fields. The API server refuses a write
// whose field is over its limit, so every such field goes through String.
package truncate

import "unicode/utf8"

// Marker ends a string that was shortened, so a reader knows text is missing.
const Marker = "..."

// String returns s when it fits in limit bytes; otherwise its longest prefix
// that, followed by Marker, fits, cut at a rune boundary so that the result
// stays valid UTF-8. A limit too small for the marker gives as much of s as
// fits, without it.
func String(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	if limit < 0 {
		limit = 0
	}
	keep, marker := limit-len(Marker), Marker
	if keep < 0 {
		keep, marker = limit, ""
	}
	// Back up to the start of a rune: a multi-byte character is never split.
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + marker
}
