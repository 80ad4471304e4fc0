/**
 * apimachinery's name and value validation tables, transcribed into
 * test/fixtures/upstream/validation.json from kubernetes/apimachinery
 * pkg/util/validation/validation_test.go at v0.34.10 (57ea95fcdaa372b20bbb922fa22a8dbd2f4b87db):
 * every good/bad list, TestIsInRange's pairs, TestIsFullyQualifiedName's message cases and
 * TestIsDNS1123SubdomainWithUnderscore's exact messages.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import * as v from '../operator/kube/names.ts'
import { runUpstreamTable, type UpstreamCase } from './support/upstream-table.ts'

type Lists = Record<string, (string | number)[]>
const fixture = JSON.parse(readFileSync(new URL('./fixtures/upstream/validation.json', import.meta.url), 'utf8')) as Record<string, Lists>

/** Each upstream test and the sandbox function it exercises (returning its problems). */
const functions: Record<string, (x: never) => unknown[]> = {
  TestIsDNS1123Label: v.isDNS1123Label,
  TestIsDNS1123Subdomain: v.isDNS1123Subdomain,
  TestIsDNS1035Label: v.isDNS1035Label,
  TestIsCIdentifier: v.isCIdentifier,
  TestIsValidPortNum: v.isValidPortNum,
  TestIsValidGroupID: v.isValidGroupID,
  TestIsValidUserID: v.isValidUserID,
  TestIsValidPortName: v.isValidPortName,
  TestIsQualifiedName: v.isQualifiedName,
  TestIsValidLabelValue: v.isValidLabelValue,
  TestIsHTTPHeaderName: v.isHTTPHeaderName,
  TestIsValidPercent: v.isValidPercent,
  TestIsConfigMapKey: v.isConfigMapKey,
  TestIsWildcardDNS1123Subdomain: v.isWildcardDNS1123Subdomain,
  TestIsFullyQualifiedDomainName: v.isFullyQualifiedDomainName,
  TestIsFullyQualifiedName: v.isFullyQualifiedName,
  TestIsDomainPrefixedPath: v.isDomainPrefixedPath,
  TestIsRelaxedEnvVarName: v.isRelaxedEnvVarName,
}

const GOOD = new Set(['goodValues', 'successCases'])
const show = (x: string | number): string => {
  const s = JSON.stringify(x)
  return s.length > 40 ? `${s.slice(0, 20)}…(${String(x).length})` : s
}

for (const [test, fn] of Object.entries(functions)) {
  t.test(`validation_test.go ${test}`, async (t) => {
    const lists = fixture[test]
    if (lists === undefined) throw new Error(`no fixture for ${test}`)
    const cases: UpstreamCase[] = []
    for (const [list, values] of Object.entries(lists)) {
      const good = GOOD.has(list)
      values.forEach((x, i) => {
        cases.push({
          name: `${list}[${i}] ${show(x)}`,
          check() {
            const problems = fn(x as never)
            if (good) return problems.length === 0 ? undefined : `expected valid: ${JSON.stringify(problems)}`
            return problems.length > 0 ? undefined : 'expected invalid'
          },
        })
      })
    }
    runUpstreamTable(t, `validation_test.go ${test}`, cases)
  })
}

t.test('validation_test.go TestIsInRange', async (t) => {
  const good: [number, number, number][] = [
    [1, 0, 10],
    [5, 5, 20],
    [25, 10, 25],
  ]
  const bad: [number, number, number][] = [
    [1, 2, 10],
    [5, -4, 2],
    [25, 100, 120],
  ]
  const cases = [
    ...good.map(([x, lo, hi]) => ({ name: `good ${x} in [${lo},${hi}]`, check: () => (v.isInRange(x, lo, hi).length === 0 ? undefined : 'invalid') })),
    ...bad.map(([x, lo, hi]) => ({
      name: `bad ${x} in [${lo},${hi}]`,
      check: () => (JSON.stringify(v.isInRange(x, lo, hi)) === JSON.stringify([`must be between ${lo} and ${hi}, inclusive`]) ? undefined : JSON.stringify(v.isInRange(x, lo, hi))),
    })),
  ]
  runUpstreamTable(t, 'validation_test.go TestIsInRange', cases)
})

t.test('validation_test.go TestIsFullyQualifiedName messages', async (t) => {
  const rows: [string, string, string][] = [
    ['name needs to be fully qualified, i.e., contains at least 2 dots', 'k8s.io', 'should be a domain with at least three segments separated by dots'],
    ['name should not include scheme', 'http://foo.k8s.io', 'a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters'],
    ['email should be invalid', 'example@foo.k8s.io', 'a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters'],
    ['name cannot be empty', '', 'Required value'],
    ['name must conform to RFC 1123', 'A.B.C', 'a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters'],
  ]
  const cases = rows.map(([name, target, err]) => ({
    name,
    check() {
      // field.NewPath("") prints as the empty string.
      const text = v.isFullyQualifiedName(target).map((e) => v.nameErrorString('', e)).join(', ')
      return text.includes(err) ? undefined : `got ${text}`
    },
  }))
  runUpstreamTable(t, 'validation_test.go TestIsFullyQualifiedName messages', cases)
})

t.test('validation_test.go TestIsDNS1123SubdomainWithUnderscore', async (t) => {
  const regex = v.regexError(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character",
    '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*',
    'example.com',
  )
  const rows: [string, string, string[]][] = [
    ['valid subdomain', 'example.com', []],
    ['valid subdomain with underscore', '_example.com', []],
    ['valid subdomain with multiple segments', 'sub._example.com', []],
    ['valid subdomain with hyphen', 'sub-domain.example.com', []],
    ['valid subdomain with underscore in middle', 'sub_domain.example.com', []],
    ['empty string', '', [regex]],
    ['invalid uppercase characters', 'Example.com', [regex]],
    ['invalid starting character', '-example.com', [regex]],
    ['invalid ending character', 'example.com-', [regex]],
    ['invalid characters', 'example@.com', [regex]],
    ['too long subdomain', `a.${'\0'.repeat(251)}.com`, [v.maxLenError(253), regex]],
    ['multiple dots', 'example..com', [regex]],
    ['underscore only', '_', [regex]],
  ]
  const cases = rows.map(([name, value, want]) => ({
    name,
    check: () => (JSON.stringify(v.isDNS1123SubdomainWithUnderscore(value)) === JSON.stringify(want) ? undefined : JSON.stringify(v.isDNS1123SubdomainWithUnderscore(value))),
  }))
  runUpstreamTable(t, 'validation_test.go TestIsDNS1123SubdomainWithUnderscore', cases)
})

t.test('messages are upstream words', async (t) => {
  // validation.go RegexError puts "', " then " or " between examples: two spaces, as the server prints.
  t.same(v.isDNS1123Label('A'), [
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
  ])
  t.same(v.isDNS1123Label('a.b'), ['must not contain dots'])
  t.same(v.isQualifiedName(''), [
    'name part must be non-empty',
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
  ])
  t.same(v.isQualifiedName(`${'a'.repeat(254)}/b`), ['prefix part must be no more than 253 characters'])
  t.same(v.isValidLabelValue('a'.repeat(64)), ['must be no more than 63 characters'])
  t.same(v.isValidPortName('1-2'), ['must contain at least one letter (a-z)'])
  t.same(v.isConfigMapKey('..'), ["must not be '..'"])
})
