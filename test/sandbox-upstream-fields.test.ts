/**
 * apimachinery's field selector tables, transcribed from kubernetes/apimachinery
 * pkg/fields/selector_test.go at v0.34.10 (57ea95fcdaa372b20bbb922fa22a8dbd2f4b87db):
 * TestSplitTerms, TestSplitTerm, TestEscapeValue, TestSelectorParse, TestDeterministicParse,
 * TestSelectorMatches and TestRequiresExactMatch (its selectors written in the string syntax; the
 * server uses it to name the object of a list by `metadata.name`). The Go-only API
 * (OneTermEqualSelector, SelectorFromSet, Empty, Transform) has no wire form and is not transcribed.
 */
import t from 'tap'
import { escapeFieldValue, parseFieldSelector, splitFieldTerm, splitFieldTerms, unescapeFieldValue } from '../operator/kube/labels.ts'
import { errorOf, runUpstreamTable, type UpstreamCase } from './support/upstream-table.ts'

t.test('fields/selector_test.go TestSplitTerms', async (t) => {
  const rows: [string, string[]][] = [
    ['a', ['a']],
    ['a=avalue', ['a=avalue']],
    ['a=avalue,b=bvalue', ['a=avalue', 'b=bvalue']],
    ['a=avalue,b==bvalue,c!=cvalue', ['a=avalue', 'b==bvalue', 'c!=cvalue']],
    ['', []],
    ['a=a,', ['a=a', '']],
    [',a=a', ['', 'a=a']],
    ['k=\\,,k2=v2', ['k=\\,', 'k2=v2']],
    ['k=\\\\,k2=v2', ['k=\\\\', 'k2=v2']],
    ['k=\\\\\\,,k2=v2', ['k=\\\\\\,', 'k2=v2']],
    ['k=\\a\\b\\', ['k=\\a\\b\\']],
    ['k=\\', ['k=\\']],
    ['함=수,목=록', ['함=수', '목=록']],
  ]
  const cases = rows.map(([input, want]) => ({
    name: JSON.stringify(input),
    check: () => (JSON.stringify(splitFieldTerms(input)) === JSON.stringify(want) ? undefined : `got ${JSON.stringify(splitFieldTerms(input))}`),
  }))
  runUpstreamTable(t, 'fields/selector_test.go TestSplitTerms', cases)
})

t.test('fields/selector_test.go TestSplitTerm', async (t) => {
  const rows: [string, { lhs: string; op: string; rhs: string } | undefined][] = [
    ['a=value', { lhs: 'a', op: '=', rhs: 'value' }],
    ['b==value', { lhs: 'b', op: '==', rhs: 'value' }],
    ['c!=value', { lhs: 'c', op: '!=', rhs: 'value' }],
    ['', undefined],
    ['a', undefined],
    ['k=\\,', { lhs: 'k', op: '=', rhs: '\\,' }],
    ['k=\\=', { lhs: 'k', op: '=', rhs: '\\=' }],
    ['k=\\\\\\a\\b\\=\\,\\', { lhs: 'k', op: '=', rhs: '\\\\\\a\\b\\=\\,\\' }],
    ['함=수', { lhs: '함', op: '=', rhs: '수' }],
  ]
  const cases = rows.map(([input, want]) => ({
    name: JSON.stringify(input),
    check: () => (JSON.stringify(splitFieldTerm(input)) === JSON.stringify(want) ? undefined : `got ${JSON.stringify(splitFieldTerm(input))}`),
  }))
  runUpstreamTable(t, 'fields/selector_test.go TestSplitTerm', cases)
})

t.test('fields/selector_test.go TestEscapeValue', async (t) => {
  const rows: [string, string][] = [
    ['', ''],
    ['a', 'a'],
    ['=', '\\='],
    [',', '\\,'],
    ['\\', '\\\\'],
    ['\\=\\,\\', '\\\\\\=\\\\\\,\\\\'],
  ]
  const cases: UpstreamCase[] = rows.map(([raw, escaped]) => ({
    name: `escape ${JSON.stringify(raw)}`,
    check() {
      if (escapeFieldValue(raw) !== escaped) return `escaped to ${escapeFieldValue(raw)}`
      const back = unescapeFieldValue(escaped)
      return back === raw ? undefined : `unescaped to ${back}`
    },
  }))
  for (const bad of ['\\', '\\\\\\', '\\a']) {
    cases.push({
      name: `invalid escape ${JSON.stringify(bad)}`,
      check() {
        try {
          return `unescaped to ${unescapeFieldValue(bad)}`
        } catch (e) {
          return /^invalid field selector: invalid escape sequence: /.test((e as Error).message) ? undefined : (e as Error).message
        }
      },
    })
  }
  runUpstreamTable(t, 'fields/selector_test.go TestEscapeValue', cases)
})

const parses = (s: string): string | undefined => errorOf(() => parseFieldSelector(s))

t.test('fields/selector_test.go TestSelectorParse', async (t) => {
  const good = ['x=a,y=b,z=c', '', 'x!=a,y=b', 'x=a||y\\=b', 'x=a\\=\\=b']
  const bad = ['x=a||y=b', 'x==a==b', 'x=a,b', 'x in (a)', 'x in (a,b,c)', 'x']
  const cases: UpstreamCase[] = [
    ...good.map((s) => ({
      name: `good ${JSON.stringify(s)}`,
      check() {
        const err = parses(s)
        if (err !== undefined) return err
        const out = parseFieldSelector(s).toString()
        return out === s ? undefined : `restring gave ${out}`
      },
    })),
    ...bad.map((s) => ({ name: `bad ${JSON.stringify(s)}`, check: () => (parses(s) === undefined ? 'parsed' : undefined) })),
    {
      name: 'TestDeterministicParse',
      check: () => (parseFieldSelector('x=a,a=x').toString() === parseFieldSelector('a=x,x=a').toString() ? undefined : 'differs'),
    },
  ]
  runUpstreamTable(t, 'fields/selector_test.go TestSelectorParse', cases)
})

t.test('fields/selector_test.go TestSelectorMatches', async (t) => {
  const fieldset = { foo: 'bar', baz: 'blah', complex: '=value\\,\\' }
  const rows: [string, Record<string, string>, boolean][] = [
    ['', { x: 'y' }, true],
    ['x=y', { x: 'y' }, true],
    ['x=y,z=w', { x: 'y', z: 'w' }, true],
    ['x!=y,z!=w', { x: 'z', z: 'a' }, true],
    ['notin=in', { notin: 'in' }, true],
    ['x=y', { x: 'z' }, false],
    ['x=y,z=w', { x: 'w', z: 'w' }, false],
    ['x!=y,z!=w', { x: 'z', z: 'w' }, false],
    ['foo=bar', fieldset, true],
    ['baz=blah', fieldset, true],
    ['foo=bar,baz=blah', fieldset, true],
    ['foo=bar,baz=blah,complex=\\=value\\\\\\,\\\\', fieldset, true],
    ['foo=blah', fieldset, false],
    ['baz=bar', fieldset, false],
    ['foo=bar,foobar=bar,baz=blah', fieldset, false],
  ]
  const cases = rows.map(([sel, set, want], i) => ({
    name: `#${i} ${JSON.stringify(sel)}`,
    check: () => (parseFieldSelector(sel).matches(set) === want ? undefined : `matches gave ${!want}`),
  }))
  runUpstreamTable(t, 'fields/selector_test.go TestSelectorMatches', cases)
})

t.test('fields/selector_test.go TestRequiresExactMatch', async (t) => {
  // [case, the selector in string form, label, value, found]
  const rows: [string, string, string, string, boolean][] = [
    ['empty set', '', 'test', '', false],
    ['empty hasTerm', '=', 'test', '', false],
    ['skipped hasTerm', 'a=b', 'test', '', false],
    ['valid hasTerm', 'test=b', 'test', 'b', true],
    ['valid hasTerm no value', 'test=', 'test', '', true],
    ['valid notHasTerm', 'test!=b', 'test', '', false],
    ['valid notHasTerm no value', 'test!=', 'test', '', false],
    ['nil andTerm', '', 'test', '', false],
    ['empty andTerm', ',', 'test', '', false],
    ['nested andTerm', ',', 'test', '', false],
    ['nested andTerm matches', 'test=b', 'test', 'b', true],
    ['andTerm with non-match', '=,test=b', 'test', 'b', true],
  ]
  const cases = rows.map(([name, sel, label, value, found]) => ({
    name,
    check() {
      const got = parseFieldSelector(sel).requiresExactMatch(label)
      return (got !== undefined) === found && (got ?? '') === value ? undefined : `got ${JSON.stringify(got)}`
    },
  }))
  runUpstreamTable(t, 'fields/selector_test.go TestRequiresExactMatch', cases)
})

t.test('field selector errors carry upstream messages', async (t) => {
  t.equal(parses('x'), "invalid selector: 'x'; can't understand 'x'")
  t.equal(parses('x=a=b'), 'invalid field selector: unescaped character in value: 61')
  t.equal(parses('x=a,b'), "invalid selector: 'x=a,b'; can't understand 'b'")
  t.equal(parses('x=\\a'), 'invalid field selector: invalid escape sequence: \\a')
})
