package snapshot

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// blockYAMLToJSON converts one YAML document to JSON, quickly, when the
// document keeps to the plain block style that `oc get -o yaml` and `kubectl
// get -o yaml` write: block mappings and sequences, one scalar per line,
// plain or quoted on one line, `{}` and `[]`. ok is false as soon as the
// document uses anything else (a block scalar, an anchor, a tag, a flow
// collection, a comment after a value, a scalar that YAML would read as a
// float, a timestamp, a YAML 1.1 boolean other than true/false, a key longer
// than YAML's 1024 characters, ...): the caller then converts it with the
// YAML library. Whatever it accepts, it converts to exactly the JSON the YAML
// library would give (the tests compare the two on every snapshot file, and
// a fuzz test on any input), so the faster path never changes what is read.
//
// It exists because the Nodes of a large cluster are megabytes of YAML, and
// the general YAML parser spends about a second of a 2-core machine on
// 5,000 of them; this converter reads the same in a few tens of
// milliseconds.
func blockYAMLToJSON(doc []byte) (json []byte, ok bool) {
	if !printable(doc) {
		return nil, false
	}
	c := converter{out: make([]byte, 0, len(doc))}
	if !c.split(string(doc)) || len(c.lines) == 0 {
		return nil, false
	}
	if !c.node(c.lines[0].indent) || c.next != len(c.lines) {
		return nil, false
	}
	return c.out, true
}

// printable says whether doc is valid UTF-8 without the characters YAML
// refuses in a stream (controls but the line feed, DEL, C1 controls, the byte
// order mark and noncharacters); tabs and carriage returns are refused later,
// as this converter's own limits.
func printable(doc []byte) bool {
	for i := 0; i < len(doc); {
		b := doc[i]
		if b < utf8.RuneSelf {
			if (b < 0x20 && b != '\n' && b != '\t' && b != '\r') || b == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(doc[i:])
		if r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) || r == 0xfeff || r == 0xfffe || r == 0xffff {
			return false
		}
		i += size
	}
	return true
}

// line is a line with content: its indentation, its text without it, and
// its index among all the lines of the document.
type line struct {
	indent int
	text   string
	raw    int
}

type converter struct {
	raw   []string // every line of the document, for block scalars
	lines []line   // the lines with content, but comments
	next  int      // the index in lines of the next line to read
	out   []byte
}

// split cuts the document into lines with content, leaving out blank lines
// and whole-line comments.
func (c *converter) split(doc string) bool {
	c.raw = strings.Split(doc, "\n")
	c.lines = make([]line, 0, len(c.raw))
	for r, text := range c.raw {
		indent := 0
		for indent < len(text) && text[indent] == ' ' {
			indent++
		}
		text = text[indent:]
		switch {
		case text == "", text[0] == '#':
			continue
		case strings.ContainsAny(text, "\t\r"), text[0] == '%', text == "---", text == "...",
			strings.HasPrefix(text, "--- "), strings.HasPrefix(text, "... "):
			// Tabs, directives and document markers: the YAML library's.
			return false
		}
		c.lines = append(c.lines, line{indent, strings.TrimRight(text, " "), r})
	}
	return true
}

// node converts the mapping or sequence whose lines start at the next line,
// indented by indent.
func (c *converter) node(indent int) bool {
	if c.next >= len(c.lines) || c.lines[c.next].indent != indent {
		return false
	}
	if isItem(c.lines[c.next].text) {
		return c.sequence(indent)
	}
	return c.mapping(indent)
}

// isItem says whether a line's text starts a block sequence item.
func isItem(text string) bool {
	return text == "-" || strings.HasPrefix(text, "- ")
}

// mapping converts the block mapping whose entries are the lines indented by
// indent from the next one.
func (c *converter) mapping(indent int) bool {
	c.out = append(c.out, '{')
	var keys []string
	for first := true; c.next < len(c.lines); first = false {
		l := c.lines[c.next]
		if l.indent < indent || (l.indent == indent && isItem(l.text)) {
			break
		}
		if l.indent > indent {
			return false
		}
		key, rest, ok := entry(l.text)
		if !ok {
			return false
		}
		// A duplicate key is the YAML library's to judge.
		for _, k := range keys {
			if k == key {
				return false
			}
		}
		keys = append(keys, key)
		if !first {
			c.out = append(c.out, ',')
		}
		c.out = appendString(c.out, key)
		c.out = append(c.out, ':')
		c.next++
		if !c.value(indent, rest, true) {
			return false
		}
	}
	c.out = append(c.out, '}')
	return true
}

// sequence converts the block sequence whose items are the lines indented by
// indent, starting with "- ", from the next one.
func (c *converter) sequence(indent int) bool {
	c.out = append(c.out, '[')
	for first := true; c.next < len(c.lines); first = false {
		l := c.lines[c.next]
		if l.indent < indent || (l.indent == indent && !isItem(l.text)) {
			break
		}
		if l.indent > indent {
			return false
		}
		if !first {
			c.out = append(c.out, ',')
		}
		rest := strings.TrimLeft(strings.TrimPrefix(l.text, "-"), " ")
		if _, _, isEntry := entry(rest); isEntry {
			// "- key: value": a mapping whose entries are indented to its
			// first key. The line is read again as that first entry.
			c.lines[c.next] = line{indent: l.indent + len(l.text) - len(rest), text: rest, raw: l.raw}
			if !c.mapping(c.lines[c.next].indent) {
				return false
			}
			continue
		}
		c.next++
		if !c.value(indent, rest, false) {
			return false
		}
	}
	c.out = append(c.out, ']')
	return true
}

// value converts what follows a key or a sequence item's dash on a line
// indented by indent: a scalar on the same line, or else the block on the
// next lines (a mapping value's sequence may be indented like its key).
func (c *converter) value(indent int, rest string, inMapping bool) bool {
	if rest == "|" || rest == "|-" {
		return c.literal(indent, rest == "|-")
	}
	if rest != "" {
		if c.next < len(c.lines) && c.lines[c.next].indent > indent {
			return false // a scalar continued on the next lines
		}
		return c.scalar(rest)
	}
	if c.next < len(c.lines) {
		l := c.lines[c.next]
		if l.indent > indent {
			return c.node(l.indent)
		}
		if inMapping && l.indent == indent && isItem(l.text) {
			return c.sequence(indent)
		}
	}
	c.out = append(c.out, "null"...)
	return true
}

// literal converts the literal block scalar ("|" or, stripped of its final
// line break, "|-") whose header ends the line before the next one, in a
// block indented by indent: the lines after it that are blank or indented
// more, without the indentation of its first line, as `oc get -o yaml` writes
// a multi-line message.
func (c *converter) literal(indent int, strip bool) bool {
	header := c.lines[c.next-1].raw
	// The block ends at the first line with content indented no more than
	// its key (or dash).
	end := len(c.raw)
	for j := c.next; j < len(c.lines); j++ {
		if c.lines[j].indent <= indent {
			end = c.lines[j].raw
			break
		}
	}
	var body []string
	for r := header + 1; r < end; r++ {
		body = append(body, c.raw[r])
	}
	// Trailing blank lines are not the block's, for both chompings.
	for len(body) > 0 && strings.TrimLeft(body[len(body)-1], " ") == "" {
		body = body[:len(body)-1]
	}
	if len(body) == 0 {
		c.out = appendString(c.out, "")
		return true
	}
	// The first line sets the block's indentation; a leading blank line
	// (whose spaces may count) is the YAML library's.
	first := body[0]
	width := len(first) - len(strings.TrimLeft(first, " "))
	if width <= indent || width == len(first) {
		return false
	}
	var b strings.Builder
	for i, l := range body {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case len(l) >= width && strings.TrimLeft(l[:width], " ") == "":
			b.WriteString(l[width:])
		case strings.TrimLeft(l, " ") == "":
			// A blank line, less indented: an empty line of the text.
		default:
			return false
		}
	}
	if !strip {
		b.WriteByte('\n')
	}
	c.out = appendString(c.out, b.String())
	// The lines with content within the block are text, not structure.
	for c.next < len(c.lines) && c.lines[c.next].raw < end {
		c.next++
	}
	return true
}

// maxKey is the longest a key may be written, in characters up to its
// colon: YAML limits implicit keys to 1024, and the YAML library refuses a
// longer one.
const maxKey = 1024

// tooLong says whether a key, as written up to its colon, is over maxKey
// characters. A key has at least as many bytes as characters, so the
// characters are counted only for the rare key of over maxKey bytes, not for
// every key on this fast path.
func tooLong(written string) bool {
	return len(written) > maxKey && utf8.RuneCountInString(written) > maxKey
}

// entry splits a mapping entry "key: value" or "key:" of a plain key, or of
// a quoted one; ok is false for anything else.
func entry(text string) (key, rest string, ok bool) {
	if text == "" {
		return "", "", false
	}
	if text[0] == '"' || text[0] == '\'' {
		k, n, ok := quoted(text)
		if !ok || n == len(text) || text[n] != ':' || (n+1 < len(text) && text[n+1] != ' ') || tooLong(text[:n]) {
			return "", "", false
		}
		return k, strings.TrimLeft(text[n+1:], " "), true
	}
	i := strings.Index(text, ": ")
	switch {
	case i >= 0:
		key, rest = text[:i], strings.TrimLeft(text[i+2:], " ")
	case text[len(text)-1] == ':':
		key = text[:len(text)-1]
	default:
		return "", "", false
	}
	if !isPlainString(key) || strings.HasSuffix(key, " ") || tooLong(key) {
		return "", "", false
	}
	return key, rest, true
}

// scalar converts a scalar written on one line.
func (c *converter) scalar(s string) bool {
	switch {
	case s == "{}", s == "[]":
		c.out = append(c.out, s...)
		return true
	case s[0] == '"' || s[0] == '\'':
		v, n, ok := quoted(s)
		if !ok || n != len(s) {
			return false
		}
		c.out = appendString(c.out, v)
		return true
	case s == "true", s == "false", s == "null":
		c.out = append(c.out, s...)
		return true
	case isDecimal(s):
		c.out = append(c.out, s...)
		return true
	case isPlainString(s):
		c.out = appendString(c.out, s)
		return true
	}
	return false
}

// isDecimal says whether s is an integer YAML reads as the same JSON number:
// no sign but '-', no leading zero, no underscore, and within int64.
func isDecimal(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits == "0" && s != "0") || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// isPlainString says whether the plain (unquoted) scalar s is certainly read
// by YAML as the string s itself: it starts with nothing YAML gives a
// meaning, holds no comment or mapping indicator, and is no word or number
// YAML resolves to something else.
func isPlainString(s string) bool {
	if s == "" || strings.Contains(s, " #") || strings.Contains(s, ": ") || s[len(s)-1] == ':' {
		return false
	}
	switch first := s[0]; {
	case first >= 'a' && first <= 'z', first >= 'A' && first <= 'Z':
		// A letter: a string, unless a YAML 1.1 boolean or null.
		switch strings.ToLower(s) {
		case "y", "yes", "n", "no", "on", "off", "true", "false", "null":
			return false
		}
		return true
	case first >= '0' && first <= '9':
		// A digit: a string unless a number or a timestamp (which start
		// with four digits and a dash) in any of YAML's forms.
		if len(s) > 4 && s[4] == '-' && isDigits(s[:4]) {
			return false
		}
		plain := strings.ReplaceAll(s, "_", "")
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseFloat(plain, 64); err == nil {
			return false
		}
		return !strings.HasPrefix(plain, "0b")
	case first == '/', first == '_':
		return true
	}
	// Indicators, signs, dots and anything else: the YAML library's.
	return false
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// quoted reads the single- or double-quoted scalar at the start of s, which
// must end on this line; n is the length it takes. Double-quoted scalars may
// use the escapes JSON knows; any other is the YAML library's.
func quoted(s string) (v string, n int, ok bool) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case ch == q:
			return b.String(), i + 1, true
		case ch == '\\' && q == '"':
			if i+1 >= len(s) {
				return "", 0, false
			}
			i++
			switch s[i] {
			case '"', '\\', '/':
				b.WriteByte(s[i])
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				if i+4 >= len(s) {
					return "", 0, false
				}
				r, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
				if err != nil || (r >= 0xD800 && r <= 0xDFFF) {
					return "", 0, false
				}
				b.WriteRune(rune(r))
				i += 4
			default:
				return "", 0, false
			}
		default:
			b.WriteByte(ch)
		}
	}
	return "", 0, false // not closed on this line
}

// appendString appends s as a JSON string.
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 0x20 && ch != '"' && ch != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch ch {
		case '"', '\\':
			out = append(out, '\\', ch)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&0xF])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
