package failpoints

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
)

// readme returns README.md and the short names of its catalogue sections
// ("### <name>" headings).
func readme(t *testing.T) (string, []string) {
	t.Helper()
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	text := string(data)
	var names []string
	for _, m := range regexp.MustCompile("(?m)^### (.+)$").FindAllStringSubmatch(text, -1) {
		names = append(names, strings.TrimSpace(m[1]))
	}
	return text, names
}

// Every failpoint the broker declares is documented: a section under its
// short name that gives its full name, and a row in the names table.
func TestReadmeDocumentsEveryFailpoint(t *testing.T) {
	text, sections := readme(t)
	require.NotEmpty(t, broker.Failpoints)
	for _, name := range broker.Failpoints {
		assert.Contains(t, sections, name, "README.md has no \"### %s\" section", name)
		assert.Contains(t, text, "Full name: `"+broker.FailpointPath(name)+"`", "README.md does not give %s's full name", name)
		assert.Contains(t, text, "| `"+name+"` |", "README.md's names table has no row for %s", name)
	}
}

// The README documents no failpoint the broker does not have, so a rename
// in impl/broker cannot leave a stale section behind.
func TestReadmeDocumentsNoOtherFailpoint(t *testing.T) {
	_, sections := readme(t)
	for _, name := range sections {
		assert.Contains(t, broker.Failpoints, name, "README.md documents %q, which broker.Failpoints does not declare", name)
	}
	assert.Len(t, sections, len(broker.Failpoints), "a failpoint is documented twice")
}

// Catalogue holds exactly the broker's failpoints, once each, in the
// README's order, with every field filled in.
func TestCatalogueMatchesBroker(t *testing.T) {
	_, sections := readme(t)
	var names []string
	for _, p := range Catalogue {
		names = append(names, p.Name)
		assert.NotEmpty(t, p.Where, p.Name)
		assert.NotEmpty(t, p.Tests, p.Name)
		assert.Equal(t, "github.com/watermarkhq/watermark/impl/broker/"+p.Name, p.Path())
	}
	assert.ElementsMatch(t, broker.Failpoints, names)
	assert.Equal(t, len(names), len(slices.Compact(slices.Sorted(slices.Values(names)))), "a name appears twice")
	assert.Equal(t, sections, names, "Catalogue and README.md list the failpoints in different orders")
}
