package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// Discover describes the named binaries: each must be a main package at
// ./cmd/<name> in root. The description is the first sentence of the
// package's doc comment, so it stays next to the code it describes.
func Discover(ctx context.Context, root string, names []string) ([]Binary, error) {
	var out []Binary
	for _, n := range names {
		pkg := "./cmd/" + n
		cmd := exec.CommandContext(ctx, "go", "list", "-json=Name,Doc", pkg)
		cmd.Dir = root
		cmd.Env = append(cmd.Environ(), goWork(root))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		raw, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list %s: %w\n%s", pkg, err, stderr.String())
		}
		var p struct{ Name, Doc string }
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		if p.Name != "main" {
			return nil, fmt.Errorf("%s is package %s, not a main package", pkg, p.Name)
		}
		out = append(out, Binary{Name: n, Package: pkg, Description: Description(p.Doc)})
	}
	return out, nil
}

// Description turns "Command x does y. More." into "x does y.".
func Description(doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	doc = strings.TrimPrefix(doc, "Command ")
	if i := strings.Index(doc, ". "); i >= 0 {
		doc = doc[:i+1]
	}
	return doc
}
