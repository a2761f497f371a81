package framework

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/tools/ocmsim"
)

// The local OCM of the demo and the whole-system suite: it knows the
// simulated cluster, which authenticates with its pull secret as a managed
// cluster does, and holds one upgrade policy.
const (
	OCMClusterID = "1demoocmcluster00000000000000000"
	OCMPolicyID  = "demo-policy"
)

var ocmToken = base64.StdEncoding.EncodeToString([]byte("demo:cloud-token"))

// StartOCM starts the local OCM and writes the cluster's pull secret.
func StartOCM(ctx context.Context, c client.Client) (*ocmsim.Server, error) {
	cv := &configv1.ClusterVersion{}
	if err := c.Get(ctx, client.ObjectKey{Name: "version"}, cv); err != nil {
		return nil, err
	}
	sim := ocmsim.Start()
	sim.AddCluster(ocmsim.Cluster{ID: OCMClusterID, ExternalID: string(cv.Spec.ClusterID), ChannelGroup: "stable",
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

// OSDConfig is MUO's ConfigMap content for an OSD cluster whose upgrades
// come from the OCM at ocmURL (MUO's documented defaults otherwise, short
// waits), with extra YAML appended.
func OSDConfig(ocmURL, extra string) string {
	return "upgradeType: OSD\nconfigManager:\n  source: OCM\n  ocmBaseUrl: " + ocmURL +
		"\n  watchInterval: 1\nmaintenance:\n  controlPlaneTime: 90\nscale:\n  timeOut: 30\n" +
		"featureGate:\n  enabled:\n  - ServiceLogNotification\n" + extra
}

// LocalConfig is MUO's ConfigMap content for a cluster whose UpgradeConfig is
// written locally (configManager.source LOCAL), with MUO's keys and short
// waits. upgradeType is left to its default: it only shapes the
// UpgradeConfigs made from OCM policies; a local one's own spec.type chooses
// its steps.
const LocalConfig = `configManager:
  source: LOCAL
  localConfigName: managed-upgrade-config
  watchInterval: 1
maintenance:
  controlPlaneTime: 90
upgradeWindow:
  delayTrigger: 30
  timeOut: 120
nodeDrain:
  expectedNodeDrainTime: 8
  timeOut: 45
scale:
  timeOut: 30
`

// ScheduleInOCM writes MUO's ConfigMap (config) in namespace and schedules
// the update to version at at as the upgrade policy in OCM; it returns once
// the upgrade-scheduler has turned the policy into the UpgradeConfig.
func ScheduleInOCM(ctx context.Context, c client.Client, sim *ocmsim.Server, namespace, config, version string, at time.Time) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-operator-config", Namespace: namespace},
		Data: map[string]string{"config.yaml": config}}
	if err := c.Create(ctx, cm); err != nil {
		return err
	}
	sim.SetPolicy(OCMClusterID, ocmsim.Policy{ID: OCMPolicyID, Version: version, NextRun: at})
	err := WaitFor(ctx, time.Minute, func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "managed-upgrade-config"}, &upgradev1alpha1.UpgradeConfig{}) == nil
	})
	if err != nil {
		return fmt.Errorf("the upgrade-scheduler did not create the UpgradeConfig from the OCM policy: %w", err)
	}
	return nil
}
