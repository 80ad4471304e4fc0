/**
 * apimachinery's label selector tables, transcribed from kubernetes/apimachinery
 * pkg/labels/selector_test.go at v0.34.10 (57ea95fcdaa372b20bbb922fa22a8dbd2f4b87db):
 * TestSelectorParse, TestDeterministicParse, TestSelectorMatches, TestRequirementConstructor,
 * TestToString, TestRequirementSelectorMatching and TestSetSelectorParser. The lexer and parser
 * internals (TestLexer, TestLexerSequence, TestParserLookahead, TestParseOperator) and the Go-only
 * API (Add, SafeSort, RequiresExactMatch, SelectorFromSet, Equal, MatchesNothing) have no wire form
 * and are not transcribed; what they feed is covered through Parse. From pkg/apis/meta/v1:
 * helpers_test.go TestLabelSelectorAsSelector (a LabelSelector object as a selector) and
 * validation/validation_test.go TestLabelSelectorMatchExpression and TestValidateLabels.
 */
import t from 'tap'
import { formatLabelSelector, labelSelectorAsSelector, newRequirement, parseLabelSelector, requirementString, selectorOf, SelectorError, type Requirement } from '../operator/kube/labels.ts'
import { validateLabels, validateLabelSelector } from '../operator/kube/builtin/meta.ts'
import { errorOf, runUpstreamTable, type UpstreamCase } from './support/upstream-table.ts'

const parses = (s: string): string | undefined => errorOf(() => parseLabelSelector(s))

t.test('selector_test.go TestSelectorParse', async (t) => {
  const good = ['x=a,y=b,z=c', '', 'x!=a,y=b', 'x=', 'x= ', 'x=,z= ', 'x= ,z= ', '!x', 'x>1', 'x>1,z<5']
  const bad = ['x=a||y=b', 'x==a==b', '!x=a', 'x<a']
  const cases: UpstreamCase[] = [
    ...good.map((s) => ({
      name: `good ${JSON.stringify(s)}`,
      check() {
        const err = parses(s)
        if (err !== undefined) return err
        const out = parseLabelSelector(s).toString()
        return out === s.replaceAll(' ', '') ? undefined : `restring gave ${out}`
      },
    })),
    ...bad.map((s) => ({ name: `bad ${JSON.stringify(s)}`, check: () => (parses(s) === undefined ? 'parsed' : undefined) })),
    {
      name: 'TestDeterministicParse',
      check: () => (parseLabelSelector('x=a,a=x').toString() === parseLabelSelector('a=x,x=a').toString() ? undefined : 'differs'),
    },
  ]
  runUpstreamTable(t, 'labels/selector_test.go TestSelectorParse', cases)
})

t.test('selector_test.go TestSelectorMatches', async (t) => {
  const labelset = { foo: 'bar', baz: 'blah' }
  const rows: [string, Record<string, string>, boolean][] = [
    ['', { x: 'y' }, true],
    ['x=y', { x: 'y' }, true],
    ['x=y,z=w', { x: 'y', z: 'w' }, true],
    ['x!=y,z!=w', { x: 'z', z: 'a' }, true],
    ['notin=in', { notin: 'in' }, true],
    ['x', { x: 'z' }, true],
    ['!x', { y: 'z' }, true],
    ['x>1', { x: '2' }, true],
    ['x<1', { x: '0' }, true],
    ['x=z', {}, false],
    ['x=y', { x: 'z' }, false],
    ['x=y,z=w', { x: 'w', z: 'w' }, false],
    ['x!=y,z!=w', { x: 'z', z: 'w' }, false],
    ['x', { y: 'z' }, false],
    ['!x', { x: 'z' }, false],
    ['x>1', { x: '0' }, false],
    ['x<1', { x: '2' }, false],
    ['foo=bar', labelset, true],
    ['baz=blah', labelset, true],
    ['foo=bar,baz=blah', labelset, true],
    ['foo=blah', labelset, false],
    ['baz=bar', labelset, false],
    ['foo=bar,foobar=bar,baz=blah', labelset, false],
  ]
  const cases = rows.map(([sel, set, want], i) => ({
    name: `#${i} ${JSON.stringify(sel)} ${want ? 'matches' : 'does not match'} ${JSON.stringify(set)}`,
    check: () => (parseLabelSelector(sel).matches(set) === want ? undefined : `matches gave ${!want}`),
  }))
  runUpstreamTable(t, 'labels/selector_test.go TestSelectorMatches', cases)
})

t.test('selector_test.go TestRequirementConstructor', async (t) => {
  // [key, operator, values, the expected error's field, type and bad value (Detail is ignored upstream)]
  const a254 = 'a'.repeat(254)
  const rows: [string, string, string[], [string, string, string] | undefined][] = [
    ['x1', 'in', [], ['values', 'Invalid value', '[]']],
    ['x2', 'notin', [], ['values', 'Invalid value', '[]']],
    ['x3', 'in', ['foo'], undefined],
    ['x4', 'notin', ['foo'], undefined],
    ['x5', '=', ['bar', 'foo'], ['values', 'Invalid value', '["bar","foo"]']],
    ['x6', 'exists', [], undefined],
    ['x7', '!', [], undefined],
    ['x8', 'exists', ['foo'], ['values', 'Invalid value', '["foo"]']],
    ['x9', 'in', ['bar'], undefined],
    ['x10', 'in', ['bar'], undefined],
    ['x11', 'gt', ['1'], undefined],
    ['x12', 'lt', ['6'], undefined],
    ['x13', 'gt', [], ['values', 'Invalid value', '[]']],
    ['x14', 'gt', ['bar'], ['values[0]', 'Invalid value', '"bar"']],
    ['x15', 'lt', ['bar'], ['values[0]', 'Invalid value', '"bar"']],
    [a254, 'exists', [], ['key', 'Invalid value', JSON.stringify(a254)]],
    ['x16', '=', [a254], ['values[0][x16]', 'Invalid value', JSON.stringify(a254)]],
    ['x17', '=', ['a b'], ['values[0][x17]', 'Invalid value', '"a b"']],
    ['x18', 'unsupportedOp', [], ['operator', 'Unsupported value', '"unsupportedOp"']],
  ]
  const cases = rows.map(([key, op, values, want]) => ({
    name: key.length > 20 ? `${key.slice(0, 8)}…(${key.length})` : key,
    check(): string | undefined {
      let got: string | undefined
      try {
        newRequirement(key, op, values)
      } catch (e) {
        if (!(e instanceof SelectorError)) throw e
        got = e.message
      }
      if (want === undefined) return got === undefined ? undefined : `unexpected error ${got}`
      const prefix = `${want[0]}: ${want[1]}: ${want[2]}`
      if (got === undefined) return `no error, want ${prefix}`
      return got === prefix || got.startsWith(`${prefix}: `) ? undefined : `got ${got}`
    },
  }))
  runUpstreamTable(t, 'labels/selector_test.go TestRequirementConstructor', cases)
})

const req = (key: string, operator: string, values: string[] = []): Requirement => newRequirement(key, operator, [...values].sort())
const zero = { key: '', operator: '', values: [] } as unknown as Requirement

t.test('selector_test.go TestToString', async (t) => {
  const rows: [Requirement[], string][] = [
    [[req('x', 'in', ['abc', 'def']), req('y', 'notin', ['jkl']), req('z', 'exists')], 'x in (abc,def),y notin (jkl),z'],
    [[req('x', 'notin', ['abc', 'def']), req('y', '!=', ['jkl']), req('z', '!')], 'x notin (abc,def),y!=jkl,!z'],
    [[req('x', 'in', ['abc', 'def']), zero], 'x in (abc,def),'],
    [[req('x', 'notin', ['abc']), req('y', 'in', ['jkl', 'mno']), req('z', 'notin', [''])], 'x notin (abc),y in (jkl,mno),z notin ()'],
    [[req('x', '=', ['abc']), req('y', '==', ['jkl']), req('z', '!=', ['a']), req('z', 'exists')], 'x=abc,y==jkl,z!=a,z'],
    [[req('x', 'gt', ['2']), req('y', 'lt', ['8']), req('z', 'exists')], 'x>2,y<8,z'],
  ]
  // internalSelector.String() prints the requirements in their order.
  const cases = rows.map(([reqs, want], i) => ({
    name: `#${i} ${want}`,
    check: () => {
      const out = reqs.map(requirementString).join(',')
      return out === want ? undefined : `got ${out}`
    },
  }))
  runUpstreamTable(t, 'labels/selector_test.go TestToString', cases)
})

t.test('selector_test.go TestRequirementSelectorMatching', async (t) => {
  const rows: [Record<string, string>, Requirement[], boolean][] = [
    [{ x: 'foo', y: 'baz' }, [zero], false],
    [{ x: 'foo', y: 'baz' }, [req('x', 'in', ['foo']), req('y', 'notin', ['alpha'])], true],
    [{ x: 'foo', y: 'baz' }, [req('x', 'in', ['foo']), req('y', 'in', ['alpha'])], false],
    [{ y: '' }, [req('x', 'notin', ['']), req('y', 'exists')], true],
    [{ y: '' }, [req('x', '!'), req('y', 'exists')], true],
    [{ y: '' }, [req('x', 'notin', ['']), req('y', '!')], false],
    [{ y: 'baz' }, [req('x', 'in', [''])], false],
    [{ z: '2' }, [req('z', 'gt', ['1'])], true],
    [{ z: 'v2' }, [req('z', 'gt', ['1'])], false],
  ]
  const cases = rows.map(([set, reqs, want], i) => ({
    name: `#${i} ${reqs.map(requirementString).join(',')} on ${JSON.stringify(set)}`,
    check: () => (selectorOf(reqs).matches(set) === want ? undefined : `matches gave ${!want}`),
  }))
  runUpstreamTable(t, 'labels/selector_test.go TestRequirementSelectorMatching', cases)
})

t.test('selector_test.go TestSetSelectorParser', async (t) => {
  // [input, expected requirements (in order) or null, whether upstream compares them, valid]
  const rows: [string, Requirement[] | null, boolean, boolean][] = [
    ['', [], true, true],
    ['\rx', [req('x', 'exists')], true, true],
    ['this-is-a-dns.domain.com/key-with-dash', [req('this-is-a-dns.domain.com/key-with-dash', 'exists')], true, true],
    ['this-is-another-dns.domain.com/key-with-dash in (so,what)', [req('this-is-another-dns.domain.com/key-with-dash', 'in', ['so', 'what'])], true, true],
    ['0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)', [req('0.1.2.domain/99', 'notin', ['10.10.100.1', 'tick.tack.clock'])], true, true],
    ['foo  in\t (abc)', [req('foo', 'in', ['abc'])], true, true],
    ['x notin\n (abc)', [req('x', 'notin', ['abc'])], true, true],
    ['x  notin\t\t\t(abc,def)', [req('x', 'notin', ['abc', 'def'])], true, true],
    ['x in (abc,def)', [req('x', 'in', ['abc', 'def'])], true, true],
    ['x in (abc,)', [req('x', 'in', ['abc', ''])], true, true],
    ['x in ()', [req('x', 'in', [''])], true, true],
    ['x notin (abc,,def),bar,z in (),w', [req('bar', 'exists'), req('w', 'exists'), req('x', 'notin', ['abc', '', 'def']), req('z', 'in', [''])], true, true],
    ['x,y in (a)', [req('y', 'in', ['a']), req('x', 'exists')], false, true],
    ['x=a', [req('x', '=', ['a'])], true, true],
    ['x>1', [req('x', 'gt', ['1'])], true, true],
    ['x<7', [req('x', 'lt', ['7'])], true, true],
    ['x=a,y!=b', [req('x', '=', ['a']), req('y', '!=', ['b'])], true, true],
    ['x=a,y!=b,z in (h,i,j)', [req('x', '=', ['a']), req('y', '!=', ['b']), req('z', 'in', ['h', 'i', 'j'])], true, true],
    ['x=a||y=b', [], false, false],
    ['x,,y', null, true, false],
    [',x,y', null, true, false],
    ['x nott in (y)', null, true, false],
    ['x notin ( )', [req('x', 'notin', [''])], true, true],
    ['x notin (, a)', [req('x', 'notin', ['', 'a'])], true, true],
    ['a in (xyz),', null, true, false],
    ['a in (xyz)b notin ()', null, true, false],
    ['a ', [req('a', 'exists')], true, true],
    ['a in (x,y,notin, z,in)', [req('a', 'in', ['in', 'notin', 'x', 'y', 'z'])], true, true],
    ['a in (xyz abc)', null, false, false],
    ['a notin(', null, true, false],
    ['a (', null, false, false],
    ['(', null, false, false],
  ]
  const cases = rows.map(([input, want, compare, valid], i) => ({
    name: `#${i} ${JSON.stringify(input)}`,
    check(): string | undefined {
      const err = parses(input)
      if (err !== undefined) return valid ? `error ${err}` : undefined
      if (!valid) return 'parsed'
      if (!compare) return undefined
      const got = parseLabelSelector(input).requirements
      return JSON.stringify(got) === JSON.stringify(want) ? undefined : `got ${JSON.stringify(got)}`
    },
  }))
  runUpstreamTable(t, 'labels/selector_test.go TestSetSelectorParser', cases)
})

t.test('parse errors carry upstream messages', async (t) => {
  // pkg/labels/selector.go parse and NewRequirement; the HTTP layer answers 400 with them.
  const rows: [string, string][] = [
    ['x=a b', "found 'b', expected: ',' or 'end of string'"],
    ['x,', "found '', expected: identifier after ','"],
    [',x', "found ',', expected: !, identifier, or 'end of string'"],
    ['x in a', "unable to parse requirement: found 'a' expected: '('"],
    ['x<a', `unable to parse requirement: values[0]: Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer`],
    [
      'x/y/z',
      `unable to parse requirement: <nil>: Invalid value: "x/y/z": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ],
    [
      'x=a@b',
      `unable to parse requirement: values[0][x]: Invalid value: "a@b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
    ],
    ['x!y', "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"],
  ]
  for (const [input, message] of rows) t.equal(parses(input), message, input)
})

t.test('meta/v1 helpers_test.go TestLabelSelectorAsSelector', async (t) => {
  // apimachinery pkg/apis/meta/v1/helpers_test.go: the selector's String() against labels.Parse's.
  const matchLabels = { foo: 'bar' }
  const matchExpressions = [{ key: 'baz', operator: 'In', values: ['qux', 'norf'] }]
  const rows: { name: string; in: unknown; out?: string; matchesAll?: boolean; expectErr?: boolean }[] = [
    { name: 'nil selects nothing', in: null, out: '', matchesAll: false },
    { name: '{} selects everything', in: {}, out: '', matchesAll: true },
    { name: 'matchLabels', in: { matchLabels }, out: 'foo=bar' },
    { name: 'matchExpressions', in: { matchExpressions }, out: 'baz in (norf,qux)' },
    { name: 'both', in: { matchLabels, matchExpressions }, out: 'baz in (norf,qux),foo=bar' },
    { name: 'Exists with values is an error', in: { matchExpressions: [{ key: 'baz', operator: 'Exists', values: ['qux', 'norf'] }] }, expectErr: true },
  ]
  const cases: UpstreamCase[] = rows.map((r) => ({
    name: r.name,
    check() {
      const before = JSON.stringify(r.in)
      let out: ReturnType<typeof labelSelectorAsSelector> | undefined
      let err: string | undefined
      try {
        out = labelSelectorAsSelector(r.in)
      } catch (e) {
        if (!(e instanceof SelectorError)) throw e
        err = e.message
      }
      if (JSON.stringify(r.in) !== before) return 'the input was modified'
      if (r.expectErr) return err === undefined ? 'no error' : undefined
      if (err !== undefined) return `error ${err}`
      const want = r.out === '' ? '' : parseLabelSelector(r.out).toString()
      if (String(out) !== want) return `got ${String(out)}, want ${want}`
      if (r.matchesAll !== undefined && out?.matches({}) !== r.matchesAll) return `matches {}: ${String(out?.matches({}))}`
      return undefined
    },
  }))
  runUpstreamTable(t, 'apis/meta/v1/helpers_test.go TestLabelSelectorAsSelector', cases)
  t.equal(errorOf(() => labelSelectorAsSelector({ matchExpressions: [{ key: 'a', operator: 'Bogus' }] })), '"Bogus" is not a valid label selector operator')
  t.equal(formatLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Bogus' }] }), '<error>', 'FormatLabelSelector writes <error> for a selector it cannot convert')
})

t.test('meta/v1/validation validation_test.go TestLabelSelectorMatchExpression', async (t) => {
  // apimachinery pkg/apis/meta/v1/validation/validation_test.go: ValidateLabelSelector under
  // `labelSelector`, the number of errors and a part of the message.
  const rows: { name: string; sel: unknown; n: number; part?: string }[] = [
    { name: 'Valid LabelSelector', sel: { matchExpressions: [{ key: 'key', operator: 'In', values: ['value'] }] }, n: 0 },
    { name: "MatchExpression's key name isn't valid", sel: { matchExpressions: [{ key: '-key', operator: 'In', values: ['value'] }] }, n: 1, part: 'name part must consist of alphanumeric characters' },
    { name: "MatchExpression's operator isn't valid", sel: { matchExpressions: [{ key: 'key', operator: 'abc', values: ['value'] }] }, n: 1, part: 'not a valid selector operator' },
    { name: "MatchExpression's value name isn't valid", sel: { matchExpressions: [{ key: 'key', operator: 'In', values: ['-value'] }] }, n: 1, part: 'a valid label must be an empty string or consist of' },
  ]
  const cases: UpstreamCase[] = rows.map((r) => ({
    name: r.name,
    check() {
      const errs = validateLabelSelector('labelSelector', r.sel)
      if (errs.length !== r.n) return `${errs.length} errors: ${errs.map((e) => `${e.field}: ${e.message}`).join('; ')}`
      if (r.part !== undefined && !errs.some((e) => `${e.field}: ${e.message}`.includes(r.part as string))) return `no error contains ${r.part}`
      return undefined
    },
  }))
  runUpstreamTable(t, 'apis/meta/v1/validation/validation_test.go TestLabelSelectorMatchExpression', cases)
})

t.test('meta/v1/validation validation_test.go TestValidateLabels', async (t) => {
  // apimachinery pkg/apis/meta/v1/validation/validation_test.go: ValidateLabels under `field`.
  const good = ['simple', 'now-with-dashes', '1-starts-with-num', '1234', 'simple/simple', 'now-with-dashes/simple', 'now-with-dashes/now-with-dashes', 'now.with.dots/simple', 'now-with.dashes-and.dots/simple', '1-num.2-num/3-num', '1234/5678', '1.2.3.4/5678', 'UpperCaseAreOK123'].map((k) => ({ [k]: 'bar' }))
  good.push({ goodvalue: '123_-.BaR' })
  const namePart = 'name part must consist of'
  const name = 'a qualified name must consist of'
  const label = 'a valid label must be an empty string or consist of'
  const maxLength = 'must be no more than'
  const bad: [Record<string, string>, string][] = [
    [{ 'nospecialchars^=@': 'bar' }, namePart],
    [{ 'cantendwithadash-': 'bar' }, namePart],
    [{ 'only/one/slash': 'bar' }, name],
    [{ ['a'.repeat(254)]: 'bar' }, maxLength],
    [{ toolongvalue: 'a'.repeat(64) }, maxLength],
    [{ backslashesinvalue: 'some\\bad\\value' }, label],
    [{ nocommasallowed: 'bad,value' }, label],
    [{ strangecharsinvalue: '?#$notsogood' }, label],
  ]
  const cases: UpstreamCase[] = [
    ...good.map((labels) => ({ name: `good ${JSON.stringify(labels)}`, check: () => { const errs = validateLabels('field', labels); return errs.length === 0 ? undefined : errs.map((e) => e.message).join('; ') } })),
    ...bad.map(([labels, part]) => ({
      name: `bad ${JSON.stringify(labels).slice(0, 60)}`,
      check: () => {
        const errs = validateLabels('field', labels)
        if (errs.length !== 1) return `${errs.length} errors`
        return errs[0]?.message.includes(part) ? undefined : `${errs[0]?.message} does not include ${part}`
      },
    })),
  ]
  runUpstreamTable(t, 'apis/meta/v1/validation/validation_test.go TestValidateLabels', cases)
})
