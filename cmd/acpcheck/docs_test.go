package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/acpcheck.md's rule tables give every rule acpcheck checks, the
// client's included, with the tier and the conformance kit's IDs the code
// gives it.
func TestDocsGiveEveryRuleItsTier(t *testing.T) {
	doc, err := os.ReadFile("../../docs/acpcheck.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| (MUST|SHOULD|MAY) \\|[^|\n]*\\|([^|\n]*)\\|")
	documented := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = [2]string{m[2], strings.TrimSpace(m[3])}
	}
	for _, rule := range append(append([]Rule{}, allRules...), ruleClientPermission, ruleClientCancelled) {
		got, ok := documented[rule.ID]
		if !assert.True(t, ok, "docs/acpcheck.md has no row for %s", rule.ID) {
			continue
		}
		assert.Equal(t, string(rule.Tier), got[0], "%s's tier", rule.ID)
		assert.Equal(t, strings.Join(rule.Kit, ", "), got[1], "%s's kit IDs", rule.ID)
	}
}
