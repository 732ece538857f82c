// Package golden holds the checkpoints-across-versions suite (docs/RELIABILITY.md): stored
// sessions of each kind — completed, parked for a decision, parked for input with a timed
// wake, interrupted mid turn, parked in a sub-workflow — with their idempotency records and
// session files, committed under testdata/<format>/ in the layouts the stores write (the
// file store's directory, the DynamoDB table's items as DynamoDB JSON). A test restores
// each into a fresh store and resumes it; another writes the same sessions afresh and
// compares their stored shapes with the current format's golden files, so a change to a
// stored shape fails until a migration and a new format's golden files are added. The
// suite is its tests; this file only names the package.
package golden
