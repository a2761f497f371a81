package controller

import "unique"

// The informers decode every object into strings of its own, so the same
// label key, pool name, condition reason or message is held once per node:
// on 5,000 nodes those copies are a good share of the cache. The cache
// transforms (trimNode, trimInsight) replace such strings with one shared
// copy. unique keeps a string only as long as something refers to it, so
// values nobody holds any more (an old rendered config, a past message) are
// collected as before.

// intern is s's shared copy.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// internMap is a copy of m with shared keys and values; nil for an empty m.
// A value equal to self (a Node's hostname label is its name) is self, which
// the object holds anyway.
func internMap(m map[string]string, self string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = sameAs(v, self)
	}
	return out
}
