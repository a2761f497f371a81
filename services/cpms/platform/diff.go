package platform

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/upshift-io/upshift/libs/truncate"
)

// Change is one field that differs between a machine and the template.
type Change struct {
	// Path is the field's path in the provider spec, e.g.
	// "placement.availabilityZone" or "blockDevices[0].ebs.volumeSize".
	Path string
	// Got is the machine's value and Want the template's, as JSON; "<absent>"
	// when the field is not set on that side.
	Got, Want string
}

func (c Change) String() string { return c.Path + ": " + c.Got + " -> " + c.Want }

// Diff is the list of changes, sorted by path.
type Diff []Change

// Summary renders at most max changes on one line, for an Event or a
// condition message.
func (d Diff) Summary(max int) string {
	if len(d) == 0 {
		return "no changes"
	}
	parts := []string{}
	for i, c := range d {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(d)-max))
			break
		}
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}

const absent = "<absent>"

func diffValues(path string, want, got any, out *Diff) {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			w, inW := wm[k]
			g, inG := gm[k]
			switch {
			case !inW:
				*out = append(*out, Change{Path: p, Got: render(g), Want: absent})
			case !inG:
				*out = append(*out, Change{Path: p, Got: absent, Want: render(w)})
			default:
				diffValues(p, w, g, out)
			}
		}
		return
	}
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if wok && gok && len(wl) == len(gl) {
		for i := range wl {
			diffValues(fmt.Sprintf("%s[%d]", path, i), wl[i], gl[i], out)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		*out = append(*out, Change{Path: path, Got: render(got), Want: render(want)})
	}
}

func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return truncate.String(string(b), 80)
}
