package ocm

import (
	"encoding/json"
	"fmt"
)

// PullSecretName and PullSecretNamespace locate the cluster's pull secret,
// the only Secret the scheduler reads.
const (
	PullSecretNamespace = "openshift-config"
	PullSecretName      = "pull-secret"
	pullSecretKey       = ".dockerconfigjson"
	registry            = "cloud.openshift.com"
)

// AccessToken is the pull-secret access token MUO authenticates to OCM
// with: "<cluster ID>:<auth>", where auth is the cloud.openshift.com entry's
// auth of the pull secret's .dockerconfigjson. The SDK sends it as
// "Authorization: AccessToken <cluster ID>:<auth>".
func AccessToken(secretData map[string][]byte, clusterID string) (string, error) {
	raw, ok := secretData[pullSecretKey]
	if !ok {
		return "", fmt.Errorf("secret %s/%s has no %s", PullSecretNamespace, PullSecretName, pullSecretKey)
	}
	var cfg struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return "", fmt.Errorf("secret %s/%s: %s: %w", PullSecretNamespace, PullSecretName, pullSecretKey, err)
	}
	auth := cfg.Auths[registry].Auth
	if auth == "" {
		return "", fmt.Errorf("secret %s/%s: no auth for %s", PullSecretNamespace, PullSecretName, registry)
	}
	if clusterID == "" {
		return "", fmt.Errorf("ClusterVersion has no spec.clusterID")
	}
	return clusterID + ":" + auth, nil
}
