// The commands of docs/cli.md, run as a user copies them: every sh block, in order, on a fresh sandbox (test/support/docs.ts).
import t from 'tap'
import { runPage } from './support/docs.ts'

// A page runs its commands one by one.
t.setTimeout(600_000)
t.test('docs/cli.md: every sh block works as written', (t) => runPage(t, 'docs/cli.md'))
