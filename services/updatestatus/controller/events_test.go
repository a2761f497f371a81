package controller

import "testing"

func TestReasonWord(t *testing.T) {
	for in, want := range map[string]string{
		"Progressing - Slow": "ProgressingSlow",
		"Stalled":            "Stalled",
		"Completed":          "Completed",
		"":                   "",
	} {
		if got := reasonWord(in); got != want {
			t.Errorf("reasonWord(%q) = %q, want %q", in, got, want)
		}
	}
}
