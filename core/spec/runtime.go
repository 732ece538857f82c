package spec

import (
	"fmt"
	"slices"
	"strings"
)

// RuntimeEngine is the one runtime engine this build implements (spec 01 §2.4); an absent
// `runtime.engine` means it.
const RuntimeEngine = "archmax-harness"

// SupportedRuntimeVersions are the runtime contract versions this build implements
// (spec 01 §2.4: "1" and "2"; an absent version is "1").
var SupportedRuntimeVersions = []string{"1", "2"}

// Contract renders the runtime contract as `engine@version` ("archmax-harness@1"),
// the absent engine read as RuntimeEngine and the absent version as "1".
func (r Runtime) Contract() string {
	engine, version := r.Engine, r.Version
	if engine == "" {
		engine = RuntimeEngine
	}
	if version == "" {
		version = defaultRuntimeVersion
	}
	return engine + "@" + version
}

// UnsupportedRuntimeContractError is assembly's refusal of a workflow that declares a
// runtime contract this build does not implement (spec 01 §2.4, V-32), before any model
// work. Requested is `engine@version`; Supported lists the implemented contracts.
// Message: `Unsupported runtime contract '<requested>'. Supported: <a>, <b>.`
type UnsupportedRuntimeContractError struct {
	Workflow  string
	Requested string
	Supported []string
}

// Name is the reference error name, "UnsupportedRuntimeContractError".
func (e *UnsupportedRuntimeContractError) Name() string { return "UnsupportedRuntimeContractError" }

func (e *UnsupportedRuntimeContractError) Error() string {
	return fmt.Sprintf("Unsupported runtime contract '%s'. Supported: %s.", e.Requested, strings.Join(e.Supported, ", "))
}

// CheckRuntimeContract returns *UnsupportedRuntimeContractError when sp's `runtime` names
// an engine other than RuntimeEngine or a version outside SupportedRuntimeVersions
// (spec 01 §2.4, V-32), else nil. workflow names the workflow in the error.
func CheckRuntimeContract(workflow string, sp *MachineSpec) error {
	engine := sp.Runtime.Engine
	if (engine == "" || engine == RuntimeEngine) && slices.Contains(SupportedRuntimeVersions, sp.Runtime.Version) {
		return nil
	}
	var supported []string
	for _, v := range SupportedRuntimeVersions {
		supported = append(supported, RuntimeEngine+"@"+v)
	}
	return &UnsupportedRuntimeContractError{Workflow: workflow, Requested: sp.Runtime.Contract(), Supported: supported}
}
