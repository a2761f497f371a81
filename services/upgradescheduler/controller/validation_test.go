package controller_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// set returns a copy of MUO's example with one field replaced (nil removes it).
func set(path string, value any) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		fields := strings.Split(path, ".")
		if value == nil {
			unstructured.RemoveNestedField(u.Object, fields...)
			return
		}
		Expect(unstructured.SetNestedField(u.Object, value, fields...)).To(Succeed())
	}
}

func window(w map[string]any) func(*unstructured.Unstructured) {
	return set("spec.maintenanceWindows", []any{w})
}

var _ = Describe("UpgradeConfig validation", func() {
	DescribeTable("rejects bad input with a message naming the field",
		func(ctx context.Context, mutate func(*unstructured.Unstructured), want string) {
			u := fromYAML(muoExample, newNamespace(ctx))
			mutate(u)
			err := env.Client.Create(ctx, u)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("upgradeAt not a time", set("spec.upgradeAt", "tomorrow"),
			`spec.upgradeAt: Invalid value: "tomorrow": spec.upgradeAt must be an RFC 3339 time such as 2024-01-01T12:00:00Z`),
		Entry("upgradeAt without a zone", set("spec.upgradeAt", "2024-01-01T12:00:00"), "spec.upgradeAt must be an RFC 3339 time"),
		Entry("upgradeAt with a space", set("spec.upgradeAt", "2024-01-01 12:00:00Z"), "spec.upgradeAt must be an RFC 3339 time"),
		Entry("upgradeAt missing", set("spec.upgradeAt", nil), "spec.upgradeAt: Required value"),
		Entry("type unknown", set("spec.type", "GKE"), `spec.type: Unsupported value: "GKE": supported values: "OSD", "ARO"`),
		Entry("type missing", set("spec.type", nil), "spec.type: Required value"),
		Entry("negative PDBForceDrainTimeout", set("spec.PDBForceDrainTimeout", int64(-1)),
			"spec.PDBForceDrainTimeout: Invalid value: -1: spec.PDBForceDrainTimeout in body should be greater than or equal to 0"),
		Entry("PDBForceDrainTimeout missing", set("spec.PDBForceDrainTimeout", nil), "spec.PDBForceDrainTimeout: Required value"),
		Entry("window start not HH:MM", window(map[string]any{"start": "24:00", "end": "02:00"}),
			`spec.maintenanceWindows[0].start: Invalid value: "24:00": start must be HH:MM on a 24-hour clock`),
		Entry("window end not HH:MM", window(map[string]any{"start": "22:00", "end": "2:00"}),
			`spec.maintenanceWindows[0].end: Invalid value: "2:00": end must be HH:MM on a 24-hour clock`),
		Entry("window day unknown", window(map[string]any{"start": "22:00", "end": "02:00", "days": []any{"Funday"}}),
			`spec.maintenanceWindows[0].days[0]: Unsupported value: "Funday"`),
		Entry("window zone not an IANA name", window(map[string]any{"start": "22:00", "end": "02:00", "timeZone": "Europe Berlin"}),
			`spec.maintenanceWindows[0].timeZone: Invalid value: "Europe Berlin": timeZone must be an IANA time zone name such as Europe/Berlin`),
		Entry("window without start", window(map[string]any{"end": "02:00"}), "spec.maintenanceWindows[0].start: Required value"),
		Entry("negative deadline", set("spec.deadlines", map[string]any{"workers": map[string]any{"minutes": int64(-5)}}),
			"spec.deadlines.workers.minutes: Invalid value: -5: spec.deadlines.workers.minutes in body should be greater than or equal to 0"),
		Entry("unknown deadline policy", set("spec.deadlines", map[string]any{"start": map[string]any{"policy": "retry"}}),
			`spec.deadlines.start.policy: Unsupported value: "retry": supported values: "alert", "pause", "fail"`),
	)
})
