package main

import "runtime/debug"

// stampedVersion is the release a build was made for, set by the linker:
// go build -ldflags "-X main.stampedVersion=v0.2.0" (scripts/npm-package.sh
// builds the npm packages' binaries so).
var stampedVersion string

// version is acpcheck's, as it names itself to agents and as -version
// prints it: the stamped release, else the module version go install
// ...@v0.2.0 records in the binary, else "devel" for a build from a
// checkout.
var version = versionOf(stampedVersion, debug.ReadBuildInfo)

// versionOf picks acpcheck's version from what the linker stamped and what
// the build information says.
func versionOf(stamped string, buildInfo func() (*debug.BuildInfo, bool)) string {
	if stamped != "" {
		return stamped
	}
	if info, ok := buildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}
