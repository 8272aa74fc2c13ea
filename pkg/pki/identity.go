package pki

import "strings"

// SyncerGroup is the group (certificate Organization) of syncer
// credentials. heaven-server's front lets a user of this group reach only
// its own heaven and its own SyncTarget in root (see SyncerUser).
const SyncerGroup = "heaven:syncer"

// syncerUserPrefix starts the user name (certificate CommonName) of every
// syncer credential.
const syncerUserPrefix = SyncerGroup + ":"

// SyncerUser is the user name of the syncer of SyncTarget target, which
// syncs heaven: "heaven:syncer:<heaven>:<target>".
func SyncerUser(heaven, target string) string {
	return syncerUserPrefix + heaven + ":" + target
}

// IsSyncerUser says whether a user is a syncer, by name or by group; its
// scope is then what ParseSyncerUser finds in the name, or nothing.
func IsSyncerUser(name string, groups []string) bool {
	if strings.HasPrefix(name, syncerUserPrefix) {
		return true
	}
	for _, g := range groups {
		if g == SyncerGroup {
			return true
		}
	}
	return false
}

// ParseSyncerUser returns the heaven and SyncTarget of a SyncerUser name.
// Both are DNS labels, so neither holds a ':'.
func ParseSyncerUser(name string) (heaven, target string, ok bool) {
	rest, ok := strings.CutPrefix(name, syncerUserPrefix)
	if !ok {
		return "", "", false
	}
	heaven, target, ok = strings.Cut(rest, ":")
	if !ok || heaven == "" || target == "" || strings.Contains(target, ":") {
		return "", "", false
	}
	return heaven, target, true
}
