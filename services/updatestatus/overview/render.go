package overview

import (
	"fmt"
	"io"
	"strings"
)

// DefaultWidth is the width lines are cut to when none is given: wide
// enough for a node name and its hook, narrow enough for a split terminal.
const DefaultWidth = 120

// Render writes the view: the headline, one "waiting for" line per
// component, then the details of each component that has any. Every line
// is cut to width (0 means DefaultWidth) so that nothing wraps.
func Render(w io.Writer, m Model, width int) error {
	if width <= 0 {
		width = DefaultWidth
	}
	var b strings.Builder
	line := func(s string) { b.WriteString(cut(s, width) + "\n") }
	line(m.Headline)
	line("")
	line(fmt.Sprintf("%-18s %-14s %s", "COMPONENT", "STATE", "WAITING FOR"))
	for _, s := range m.Sections {
		line(fmt.Sprintf("%-18s %-14s %s", s.Component, s.State, s.Waiting))
	}
	for _, s := range m.Sections {
		if len(s.Lines) == 0 {
			continue
		}
		line("")
		line(s.Component + ":")
		for _, l := range s.Lines {
			line("  " + l)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cut shortens s to width runes, marking the cut.
func cut(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	return string(r[:width-1]) + "…"
}
