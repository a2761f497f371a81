package framework

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Selector is one vector selector of a PromQL expression: the metric it
// selects and the label names it matches on.
type Selector struct {
	Metric string
	Labels []string
}

// promQLKeywords are identifiers that are not metric names. Those in
// labelListKeywords take a parenthesised list of label names.
var (
	promQLKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
		"inf": true, "nan": true,
	}
	labelListKeywords = map[string]bool{
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	}
)

// PromQLSelectors returns the vector selectors of a PromQL expression, so a
// test can check that every metric an alert or a dashboard queries exists.
// It tokenizes rather than fully parses PromQL (Prometheus's parser would
// bring Prometheus's whole dependency tree into the workspace), but it is
// strict about what it skips: strings, numbers and durations, range and
// subquery brackets, function names (an identifier followed by "("),
// keywords and the label lists of by/without/on/ignoring/group_left/
// group_right. Unbalanced brackets and unknown characters are errors.
func PromQLSelectors(expr string) ([]Selector, error) {
	toks, err := promQLTokens(expr)
	if err != nil {
		return nil, err
	}
	var out []Selector
	var stack []string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t == "(" || t == "[":
			if t == "[" {
				// A range or subquery: durations, ":" and variables only.
				j := i + 1
				for j < len(toks) && toks[j] != "]" {
					if toks[j] == "[" || toks[j] == "(" || toks[j] == "{" {
						return nil, fmt.Errorf("unexpected %q inside [...] in %q", toks[j], expr)
					}
					j++
				}
				if j == len(toks) {
					return nil, fmt.Errorf("unclosed [ in %q", expr)
				}
				i = j
				continue
			}
			stack = append(stack, t)
		case t == ")":
			if len(stack) == 0 || stack[len(stack)-1] != "(" {
				return nil, fmt.Errorf("unbalanced ) in %q", expr)
			}
			stack = stack[:len(stack)-1]
		case t == "]" || t == "}":
			return nil, fmt.Errorf("unbalanced %s in %q", t, expr)
		case t == "{":
			// A selector without a name before it: {__name__="x", ...}.
			sel, next, err := matchers(toks, i, expr)
			if err != nil {
				return nil, err
			}
			if sel.Metric == "" {
				return nil, fmt.Errorf("selector without a metric name in %q", expr)
			}
			out = append(out, sel)
			i = next
		case isIdent(t):
			lower := strings.ToLower(t)
			switch {
			case labelListKeywords[lower]:
				if i+1 < len(toks) && toks[i+1] == "(" {
					j := i + 2
					for j < len(toks) && toks[j] != ")" {
						if toks[j] != "," && !isIdent(toks[j]) {
							return nil, fmt.Errorf("unexpected %q in the label list of %s in %q", toks[j], t, expr)
						}
						j++
					}
					if j == len(toks) {
						return nil, fmt.Errorf("unclosed label list of %s in %q", t, expr)
					}
					i = j
				}
			case promQLKeywords[lower]:
			case i+1 < len(toks) && (toks[i+1] == "(" ||
				strings.EqualFold(toks[i+1], "by") || strings.EqualFold(toks[i+1], "without")):
				// A function, or an aggregation (with its modifier first).
			default:
				sel := Selector{Metric: t}
				if i+1 < len(toks) && toks[i+1] == "{" {
					m, next, err := matchers(toks, i+1, expr)
					if err != nil {
						return nil, err
					}
					if m.Metric != "" {
						return nil, fmt.Errorf("metric %s also named by __name__ in %q", t, expr)
					}
					sel.Labels = m.Labels
					i = next
				}
				out = append(out, sel)
			}
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("unclosed ( in %q", expr)
	}
	return out, nil
}

// matchers reads the label matchers from the "{" at toks[i] and returns the
// selector they make (Metric set only by __name__) and the index of "}".
func matchers(toks []string, i int, expr string) (Selector, int, error) {
	var sel Selector
	j := i + 1
	for j < len(toks) && toks[j] != "}" {
		if j+2 >= len(toks) || !isIdent(toks[j]) || !isMatchOp(toks[j+1]) || !isString(toks[j+2]) {
			return sel, 0, fmt.Errorf("bad label matcher at %q in %q", strings.Join(toks[j:min(j+3, len(toks))], " "), expr)
		}
		if toks[j] == "__name__" && toks[j+1] == "=" {
			sel.Metric = unquote(toks[j+2])
		} else {
			sel.Labels = append(sel.Labels, toks[j])
		}
		j += 3
		switch {
		case j < len(toks) && toks[j] == ",":
			j++
		case j < len(toks) && toks[j] != "}":
			return sel, 0, fmt.Errorf("want , or } after a label matcher, got %q in %q", toks[j], expr)
		}
	}
	if j == len(toks) {
		return sel, 0, fmt.Errorf("unclosed { in %q", expr)
	}
	return sel, j, nil
}

func promQLTokens(expr string) ([]string, error) {
	var toks []string
	r := []rune(expr)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '#':
			for i < len(r) && r[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(r) && r[j] != c {
				if r[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(r) {
				return nil, fmt.Errorf("unclosed string in %q", expr)
			}
			toks = append(toks, string(r[i:j+1]))
			i = j + 1
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(r) && unicode.IsDigit(r[i+1])):
			// Numbers, hex, exponents and durations (5m, 1h30m).
			j := i
			for j < len(r) && (unicode.IsLetter(r[j]) || unicode.IsDigit(r[j]) || r[j] == '.' ||
				((r[j] == '+' || r[j] == '-') && (r[j-1] == 'e' || r[j-1] == 'E') && !strings.HasPrefix(string(r[i:j]), "0x"))) {
				j++
			}
			toks = append(toks, string(r[i:j]))
			i = j
		case c == '$':
			// A Grafana variable ($job, $__rate_interval, ${x}): a value,
			// never a metric.
			j := i + 1
			if j < len(r) && r[j] == '{' {
				for j < len(r) && r[j] != '}' {
					j++
				}
				j++
			} else {
				for j < len(r) && (r[j] == '_' || unicode.IsLetter(r[j]) || unicode.IsDigit(r[j])) {
					j++
				}
			}
			toks = append(toks, "0")
			i = j
		case c == '_' || c == ':' && (i+1 < len(r) && isIdentStart(r[i+1])) || unicode.IsLetter(c):
			j := i
			for j < len(r) && (r[j] == '_' || r[j] == ':' || unicode.IsLetter(r[j]) || unicode.IsDigit(r[j])) {
				j++
			}
			toks = append(toks, string(r[i:j]))
			i = j
		default:
			two := ""
			if i+1 < len(r) {
				two = string(r[i : i+2])
			}
			switch {
			case two == "==" || two == "!=" || two == "<=" || two == ">=" || two == "=~" || two == "!~":
				toks = append(toks, two)
				i += 2
			case strings.ContainsRune("(){}[],+-*/%^<>=@:", c):
				toks = append(toks, string(c))
				i++
			default:
				return nil, fmt.Errorf("unexpected %q in %q", c, expr)
			}
		}
	}
	return toks, nil
}

func isIdentStart(c rune) bool { return c == '_' || unicode.IsLetter(c) }

func isIdent(t string) bool {
	r := []rune(t)
	return len(r) > 0 && (isIdentStart(r[0]) || r[0] == ':')
}

func isMatchOp(t string) bool { return t == "=" || t == "!=" || t == "=~" || t == "!~" }

func isString(t string) bool {
	return len(t) >= 2 && strings.ContainsRune("\"'`", rune(t[0]))
}

func unquote(t string) string { return t[1 : len(t)-1] }

// Exposition is what a /metrics scrape exposes: every series name, with the
// label names seen on it.
type Exposition map[string]map[string]bool

// ParseExposition reads the Prometheus text format (ParseMetrics).
func ParseExposition(text string) (Exposition, error) {
	ms, err := ParseMetrics(text)
	if err != nil {
		return nil, err
	}
	out := Exposition{}
	for _, s := range ms {
		labels := out[s.Name]
		if labels == nil {
			labels = map[string]bool{}
			out[s.Name] = labels
		}
		for l := range s.Labels {
			labels[l] = true
		}
	}
	return out, nil
}

// Merge adds the series and labels of o: a suite that scrapes at several
// moments (mid-update, blocked, done) checks its queries against everything
// the component exported at any of them.
func (e Exposition) Merge(o Exposition) {
	for name, labels := range o {
		if e[name] == nil {
			e[name] = map[string]bool{}
		}
		for l := range labels {
			e[name][l] = true
		}
	}
}

// MissingFor lists, for each query, what its selectors need and the
// exposition lacks, prefixed with the query's source. A query that does not
// parse or selects no metric is an error: it could never be checked.
func (e Exposition) MissingFor(queries []Query) ([]string, error) {
	var out []string
	for _, q := range queries {
		sels, err := PromQLSelectors(q.Expr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.Source, err)
		}
		if len(sels) == 0 {
			return nil, fmt.Errorf("%s selects no metric: %s", q.Source, q.Expr)
		}
		for _, m := range e.Missing(sels) {
			out = append(out, q.Source+": "+m)
		}
	}
	return out, nil
}

// Missing lists, for each selector the exposition cannot satisfy, what is
// missing: the metric, or a label the selector matches on.
func (e Exposition) Missing(sels []Selector) []string {
	var out []string
	for _, s := range sels {
		labels, ok := e[s.Metric]
		if !ok {
			out = append(out, "metric "+s.Metric)
			continue
		}
		for _, l := range s.Labels {
			// job, namespace, instance, pod... are the scraper's target
			// labels, never on the exposed series.
			if !labels[l] && !targetLabels[l] {
				out = append(out, fmt.Sprintf("label %s on %s", l, s.Metric))
			}
		}
	}
	sort.Strings(out)
	return out
}

var targetLabels = map[string]bool{"job": true, "namespace": true, "instance": true, "pod": true,
	"service": true, "endpoint": true, "container": true}
