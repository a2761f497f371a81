package image

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestContainerfileHasAStagePerBinary keeps the Containerfile (not built in
// CI: it needs a container daemon) in step with cmd/ and with what Image
// builds: a final stage per binary, the binary copied to BinDir and set as
// entrypoint, on the base stage that runs as nonroot. The must-gather image
// is the one exception: oc runs it through bash and copies out with tar, so
// its stage is on a distribution's base with the binary at /usr/bin/gather,
// the path oc runs.
// The must-gather binary, and where `oc adm must-gather` runs it.
const (
	mustGather     = "upshift-must-gather"
	mustGatherPath = "/usr/bin/gather"
)

func TestContainerfileHasAStagePerBinary(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	cf := string(raw)
	mains, err := filepath.Glob(filepath.Join(root, "cmd", "*", "main.go"))
	if err != nil || len(mains) == 0 {
		t.Fatalf("no mains under cmd/: %v", err)
	}
	stages := regexp.MustCompile(`(?m)^FROM .* AS (\S+)$`).FindAllStringSubmatch(cf, -1)
	body := map[string]string{}
	parts := regexp.MustCompile(`(?m)^FROM `).Split(cf, -1)
	for i, s := range stages {
		body[s[1]] = parts[i+1]
	}
	if b := body["base"]; !strings.Contains(b, "\nUSER 65532:65532\n") || !strings.HasPrefix(b, "scratch AS base") {
		t.Errorf("the base stage is not scratch with USER 65532:65532:\n%s", b)
	}
	for _, m := range mains {
		name := filepath.Base(filepath.Dir(m))
		b, ok := body[name]
		if !ok {
			t.Errorf("Containerfile has no stage %q for cmd/%s", name, name)
			continue
		}
		bin := BinDir + "/" + name
		wants := []string{
			"base AS " + name + "\n",
			"COPY --from=build /out/bin/" + name + " " + bin + "\n",
			`ENTRYPOINT ["` + bin + `"]`,
			`org.opencontainers.image.title="` + name + `"`,
		}
		if name == mustGather {
			wants = []string{
				"${MUST_GATHER_BASE} AS " + name + "\n",
				"COPY --from=build /out/bin/" + name + " " + mustGatherPath + "\n",
				`ENTRYPOINT ["` + mustGatherPath + `"]`,
				"\nUSER 65532:65532\n",
				`org.opencontainers.image.title="` + name + `"`,
			}
		}
		for _, want := range wants {
			if !strings.Contains(b, want) {
				t.Errorf("stage %s lacks %q", name, want)
			}
		}
	}
}
