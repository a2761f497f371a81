package ocm

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	cmv1 "github.com/openshift-online/ocm-sdk-go/clustersmgmt/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// FuzzAccessToken feeds any bytes as the pull secret's .dockerconfigjson
// (written by the installer, OCM or a person) and checks what the OCM
// client relies on: no panic; a token only when the cloud.openshift.com
// entry has an auth, and then exactly "<cluster ID>:<auth>".
func FuzzAccessToken(f *testing.F) {
	for _, s := range []string{
		`{"auths":{"cloud.openshift.com":{"auth":"b3BlbnNoaWZ0","email":"a@b.c"},"quay.io":{"auth":"eA=="}}}`,
		`{"auths":{"quay.io":{"auth":"eA=="}}}`,
		`{"auths":{"cloud.openshift.com":{"auth":""}}}`,
		`{"auths":{"cloud.openshift.com":{"auth":7}}}`,
		`{"auths":null}`, `{}`, `[]`, ``,
	} {
		f.Add([]byte(s), "c1b2-cluster-id")
	}
	f.Fuzz(func(t *testing.T, raw []byte, clusterID string) {
		tok, err := AccessToken(map[string][]byte{pullSecretKey: raw}, clusterID)
		if err != nil {
			if tok != "" {
				t.Fatalf("a token with an error: %q, %v", tok, err)
			}
			return
		}
		var cfg struct {
			Auths map[string]struct {
				Auth string `json:"auth"`
			} `json:"auths"`
		}
		if json.Unmarshal(raw, &cfg) != nil {
			t.Fatalf("token %q from a secret that is not JSON", tok)
		}
		auth := cfg.Auths[registry].Auth
		if clusterID == "" || auth == "" || tok != clusterID+":"+auth {
			t.Fatalf("token %q for cluster %q and auth %q", tok, clusterID, auth)
		}
	})
}

// FuzzUpgradePolicies feeds any bytes as OCM's list of a cluster's upgrade
// policies (decoded by the SDK, as the client does) with any state for
// each, and checks what the scheduler relies on: no panic; the policy
// picked is an actionable one with a version; its UpgradeConfig spec
// either is refused with an error or names that version, a channel
// "<group>-<major>.<even minor for eus>" and an RFC 3339 time.
func FuzzUpgradePolicies(f *testing.F) {
	f.Add([]byte(`{"kind":"UpgradePolicyList","page":1,"size":2,"total":2,"items":[`+
		`{"kind":"UpgradePolicy","id":"p1","schedule_type":"manual","upgrade_type":"OSD","version":"4.16.2","next_run":"2026-12-01T10:00:00Z"},`+
		`{"kind":"UpgradePolicy","id":"p2","schedule_type":"automatic","schedule":"0 10 * * 1","version":"4.17.0","next_run":"2026-12-08T10:00:00Z"}]}`),
		"scheduled", "completed", "eus")
	f.Add([]byte(`{"items":[{"id":"p3","version":"v4.15.0-rc.1"},{"id":"p4","version":"nonsense"}]}`), "failed", "started", "")
	f.Add([]byte(`{"items":[{"id":"p5","version":"4.13.9","next_run":"0001-01-01T00:00:00Z"}]}`), "delayed", "pending", "fast")
	f.Fuzz(func(t *testing.T, body []byte, state1, state2, group string) {
		list, err := cmv1.UnmarshalUpgradePolicyList(body)
		if err != nil {
			return
		}
		var ps []Policy
		for i, p := range list {
			pol := policyOf(p)
			pol.State = state1
			if i%2 == 1 {
				pol.State = state2
			}
			ps = append(ps, pol)
		}
		picked, ok := Pick(ps, "")
		if !ok {
			return
		}
		if !actionable[picked.State] || picked.Version == "" {
			t.Fatalf("picked %+v", picked)
		}
		spec, err := Spec(Cluster{ID: "c", ChannelGroup: group}, picked, upgradev1alpha1.OSD)
		if err != nil {
			return
		}
		v, err := semver.ParseTolerant(picked.Version)
		if err != nil {
			t.Fatalf("spec for version %q, which does not parse: %v", picked.Version, err)
		}
		if group == "" {
			group = "stable"
		}
		if !strings.HasPrefix(spec.Desired.Channel, group+"-") || spec.Desired.Version != picked.Version {
			t.Fatalf("version %q group %q: spec %+v", picked.Version, group, spec.Desired)
		}
		if group == "eus" && !strings.HasSuffix(spec.Desired.Channel, fmt.Sprintf(".%d", v.Minor+v.Minor%2)) {
			t.Fatalf("eus channel %q for %s", spec.Desired.Channel, v)
		}
		if _, err := time.Parse(time.RFC3339, spec.UpgradeAt); err != nil {
			t.Fatalf("upgradeAt %q: %v", spec.UpgradeAt, err)
		}
	})
}

// FuzzAgentBodies feeds any bytes as the ocm-agent's answers for the
// cluster and a policy's state and checks what the scheduler relies on: no
// panic; a cluster only with an ID and, when the body names an external ID,
// only when it is this cluster's.
func FuzzAgentBodies(f *testing.F) {
	f.Add([]byte(`{"kind":"Cluster","id":"c1","external_id":"ext-1","version":{"channel_group":"stable"},"node_drain_grace_period":{"value":60,"unit":"minutes"}}`), "ext-1")
	f.Add([]byte(`{"kind":"Cluster","id":"c1","external_id":"other"}`), "ext-1")
	f.Add([]byte(`{"kind":"Cluster","id":""}`), "ext-1")
	f.Add([]byte(`{"kind":"UpgradePolicyState","value":"scheduled","description":"Upgrade scheduled."}`), "")
	f.Add([]byte(`null`), "")
	f.Fuzz(func(t *testing.T, body []byte, externalID string) {
		if cl, err := agentClusterFrom(body, externalID); err == nil {
			if cl.ID == "" || cl.ExternalID != externalID {
				t.Fatalf("cluster %+v accepted for external ID %q", cl, externalID)
			}
			var sent struct {
				ExternalID *string `json:"external_id"`
			}
			if json.Unmarshal(body, &sent) == nil && sent.ExternalID != nil && *sent.ExternalID != externalID {
				t.Fatalf("the agent's cluster %q accepted as %q", *sent.ExternalID, externalID)
			}
		}
		if value, desc, err := agentPolicyStateFrom(body); err != nil && (value != "" || desc != "") {
			t.Fatalf("a state with an error: %q %q %v", value, desc, err)
		}
	})
}
