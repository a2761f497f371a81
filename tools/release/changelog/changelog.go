// Package changelog writes a release's changelog section from the commit
// subjects since the previous tag. Commits are listed as written, oldest
// first, since our subjects already say what changed in the imperative;
// merge commits and fixups are left out.
package changelog

import (
	"fmt"
	"strings"
	"time"
)

// Commit is one commit of the range.
type Commit struct {
	Hash    string
	Subject string
}

// Section renders the markdown for version, released on date, covering
// commits (newest first, as git log lists them) since previous ("" when
// this is the first release).
func Section(version, previous string, date time.Time, commits []Commit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s (%s)\n\n", version, date.UTC().Format("2006-01-02"))
	if previous == "" {
		b.WriteString("First release.\n\n")
	} else {
		fmt.Fprintf(&b, "Changes since %s:\n\n", previous)
	}
	n := 0
	for i := len(commits) - 1; i >= 0; i-- {
		c := commits[i]
		s := strings.TrimSpace(c.Subject)
		if s == "" || strings.HasPrefix(s, "Merge ") || strings.HasPrefix(s, "fixup! ") || strings.HasPrefix(s, "squash! ") {
			continue
		}
		short := c.Hash
		if len(short) > 7 {
			short = short[:7]
		}
		fmt.Fprintf(&b, "- %s (%s)\n", s, short)
		n++
	}
	if n == 0 {
		b.WriteString("- No changes.\n")
	}
	return b.String()
}

// ParseLog reads `git log --format=%H%x09%s` output.
func ParseLog(out string) []Commit {
	var commits []Commit
	for _, line := range strings.Split(out, "\n") {
		hash, subject, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		commits = append(commits, Commit{Hash: hash, Subject: subject})
	}
	return commits
}
