package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/tools/ocmsim"
)

// The demo's OCM: a local one that knows the simulated cluster, which
// authenticates with its pull secret as a managed cluster does.
const (
	ocmClusterID = "1demoocmcluster00000000000000000"
	ocmPolicyID  = "demo-policy"
)

var ocmToken = base64.StdEncoding.EncodeToString([]byte("demo:cloud-token"))

// startOCM starts the local OCM and writes the cluster's pull secret.
func startOCM(ctx context.Context, c client.Client) (*ocmsim.Server, error) {
	cv := &configv1.ClusterVersion{}
	if err := c.Get(ctx, client.ObjectKey{Name: "version"}, cv); err != nil {
		return nil, err
	}
	sim := ocmsim.Start()
	sim.AddCluster(ocmsim.Cluster{ID: ocmClusterID, ExternalID: string(cv.Spec.ClusterID), ChannelGroup: "stable",
		NodeDrainGracePeriodMinutes: 60, Token: ocmToken})
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-config"}})); err != nil {
		sim.Close()
		return nil, err
	}
	err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull-secret", Namespace: "openshift-config"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"cloud.openshift.com":{"auth":"` + ocmToken + `"}}}`)},
	}))
	if err != nil {
		sim.Close()
		return nil, err
	}
	return sim, nil
}

// scheduleInOCM writes MUO's ConfigMap with its OCM provider on (its
// documented defaults otherwise) and schedules the update as an upgrade
// policy in OCM; the upgrade-scheduler turns it into the UpgradeConfig.
func scheduleInOCM(ctx context.Context, c client.Client, sim *ocmsim.Server, version string, at time.Time) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-operator-config", Namespace: namespace},
		Data: map[string]string{"config.yaml": "upgradeType: OSD\nconfigManager:\n  source: OCM\n  ocmBaseUrl: " + sim.URL() +
			"\n  watchInterval: 1\nmaintenance:\n  controlPlaneTime: 90\nscale:\n  timeOut: 30\n" +
			"featureGate:\n  enabled:\n  - ServiceLogNotification\n"}}
	if err := c.Create(ctx, cm); err != nil {
		return err
	}
	sim.SetPolicy(ocmClusterID, ocmsim.Policy{ID: ocmPolicyID, Version: version, NextRun: at})
	// The loop prints the UpgradeConfig: wait for the scheduler to create it.
	err := framework.WaitFor(ctx, time.Minute, func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "managed-upgrade-config"}, &upgradev1alpha1.UpgradeConfig{}) == nil
	})
	if err != nil {
		return fmt.Errorf("the upgrade-scheduler did not create the UpgradeConfig from the OCM policy: %w", err)
	}
	return nil
}

// printOCM prints what OCM has heard: the policy's states in order, and the
// service logs posted.
func printOCM(sim *ocmsim.Server, out io.Writer) {
	var states []string
	for _, s := range sim.StateHistory(ocmClusterID, ocmPolicyID) {
		states = append(states, s.Value)
	}
	fmt.Fprintf(out, "OCM upgrade policy %s: %s\n", ocmPolicyID, strings.Join(states, " → "))
	for _, l := range sim.ServiceLogs() {
		fmt.Fprintf(out, "OCM service log: %s\n", l.Description())
	}
}
