// Package apitest checks the UpgradeConfig CRD against a real kube-apiserver:
// MUO's UpgradeConfigs apply unchanged and read back the same, `kubectl get
// upgrade` shows MUO's columns, and invalid input is rejected with a message
// that names the field. It has no code of its own, only tests.
package apitest
