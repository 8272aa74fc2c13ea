#!/usr/bin/env bash
# Raise every dependency that a tool module under hack/ shares with the main
# module to the main module's version, when the main module's is the newer.
#
# Why: Go's build cache keys a compiled package by its sources and those of
# everything it imports, so one differing version (golang.org/x/net, say)
# makes every package above it compile again. With the versions aligned, the
# kube binaries, kubectl, kwok and the Helm test reuse what building
# heaven-server already compiled, which is most of what they need: it is the
# difference between a cold `make test` that compiles k8s.io/kubernetes once
# and one that compiles it three times.
#
# Run after changing the main module's requirements: make align-modules.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-go}
main_versions=$(mktemp)
trap 'rm -f "$main_versions"' EXIT
"$GO" list -m -f '{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' all | awk 'NF == 2' | sort >"$main_versions"

# The modules whose packages a tool module builds (its tools.go files name
# the commands), with their versions: only those matter to the cache.
# Modules without a version (the main module, or one replaced by a
# directory) are left out.
built_modules() {
	"$GO" list -e -tags tools -deps -test \
		-f '{{with .Module}}{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}{{end}}' ./... 2>/dev/null |
		awk 'NF == 2' | sort -u
}

for mod in hack/*/go.mod; do
	dir=$(dirname "$mod")
	(cd "$dir" && "$GO" mod tidy)
	requires=()
	while read -r path main_version tool_version; do
		newest=$(printf '%s\n%s\n' "$main_version" "$tool_version" | sort -V | tail -1)
		if [[ "$newest" == "$main_version" && "$main_version" != "$tool_version" ]]; then
			requires+=("-require=$path@$main_version")
		fi
	done < <(join "$main_versions" <(cd "$dir" && built_modules))
	if ((${#requires[@]} > 0)); then
		echo "$dir: ${#requires[@]} versions raised to the main module's"
		(cd "$dir" && "$GO" mod edit "${requires[@]}" && "$GO" mod tidy)
	else
		echo "$dir: aligned"
	fi
done
