// Package ocmsim is a local OpenShift Cluster Manager (OCM) for tests: an HTTP
// server speaking the paths and JSON that ocm-sdk-go's clusters_mgmt and
// service_logs clients use for a managed cluster's upgrades — the cluster
// search by external ID, the cluster's upgrade policies (paged), a policy's
// state (get and patch) and service logs (add, and list by search). Every
// response is written with the SDK's own marshalling (the clientapi model's
// Marshal* functions and builders), so the JSON shapes are the SDK's, and the
// real SDK client runs against it unchanged.
//
// Tests script it: clusters, policies and their states; the pull-secret
// access token a cluster expects ("AccessToken <cluster ID>:<token>", as the
// SDK sends a pull-secret token); faults per request (a status such as 500 or
// 429, a response held back, a response lost after the request took effect)
// scripted for the next calls or drawn at random with a seed; and a log of
// every request with its outcome, to count what was sent.
package ocmsim
