// Package controller holds aro-monitor's reconcilers, one per check. Each
// reads what it needs from the cache, asks a pure package (nsg, credentials,
// hysteresis, probe) what it means, carries out at most the actions that
// answer names, and writes only its own part of the ARO Cluster's status with
// server-side apply under its own field manager: checks never overwrite each
// other, and a second replica or ARO's own operator writing other
// conditions loses nothing.
package controller
