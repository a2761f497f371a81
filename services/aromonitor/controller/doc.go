// Package controller holds aro-monitor's reconcilers, one per check. Each
// reads what it needs from the cache, decides who owns the check (package
// ownership), asks a pure package (nsg, credentials, egress, hysteresis)
// what the observations mean, carries out at most the actions that answer
// names, and writes only its own part of aro-monitor's record — the
// MonitorConfig's status — with server-side apply under its own field
// manager, so checks never overwrite each other. For a check it replaces,
// it merges ARO's condition type into ARO's Cluster as ARO's own writers do,
// leaving every other writer's conditions as they are.
package controller
