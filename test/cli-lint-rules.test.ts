/**
 * `lint` holds a chart's rules between values (values.schema.json's x-kubernetes-validations) to
 * what the API server accepts in a CRD, and `render` applies them as the operator does: a chart
 * author learns of a broken rule before any cluster does.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { DEFAULT_CHART_DIR } from '../operator/render/chart.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'

const run = async (args: string[], stdin = '') => {
  const io = captureIO(stdin)
  const code = await runCli(args, io)
  return { code, out: io.out(), err: io.err() }
}
const schema = JSON.parse(readFileSync(join(DEFAULT_CHART_DIR, 'values.schema.json'), 'utf8')) as { 'x-kubernetes-validations': Record<string, unknown>[] }

t.test('lint refuses a rule the API server would refuse in the CRD, with its message', async (t) => {
  const broken = structuredClone(schema)
  broken['x-kubernetes-validations'].push({ rule: 'self.sise > 0', message: 'a typo in a rule' }, { rule: 'self.size >', fieldPath: '.nowhere' })
  const dir = chartWith({ 'values.schema.json': JSON.stringify(broken, null, 2) })
  const r = await run(['lint', '--chart', dir])
  t.equal(r.code, 1)
  const n = schema['x-kubernetes-validations'].length
  t.match(r.err, `values.schema.json: spec.x-kubernetes-validations[${n + 1}].fieldPath: must be a valid path`)
  t.match(r.err, `values.schema.json: spec.x-kubernetes-validations[${n}].rule: compilation failed: ERROR: <input>:1:5: undefined field 'sise'`)
  t.match(r.err, `values.schema.json: spec.x-kubernetes-validations[${n + 1}].rule: compilation failed: ERROR: <input>:1:12: Syntax error:`)
})

t.test('render refuses a CR that breaks a rule with the message the API server gives, and passes a rule added by the chart author', async (t) => {
  const more = structuredClone(schema)
  more['x-kubernetes-validations'].push({ rule: 'self.size % 2 == 1', messageExpression: "'must be odd for a quorum (got ' + string(self.size) + ')'", fieldPath: '.size' })
  const dir = chartWith({ 'values.schema.json': JSON.stringify(more, null, 2) })
  const cr = (size: number) => JSON.stringify({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'x', namespace: 'default' }, spec: { size } })
  const bad = await run(['render', '--chart', dir, '-f', '-'], cr(2))
  t.equal(bad.code, 1)
  t.match(bad.err, 'spec.size: must be odd for a quorum (got 2)')
  t.equal(bad.out, '')
  const good = await run(['render', '--chart', dir, '-f', '-'], cr(3))
  t.equal(good.code, 0, good.err)
})

t.test('lint finds a rule whose default is not values.yaml\'s: it would judge a CR differently from the chart', async (t) => {
  // values.yaml now says 30 connections; the rule still reads an unset maxConnections as 1024.
  const valuesYaml = readFileSync(join(DEFAULT_CHART_DIR, 'values.yaml'), 'utf8').replace(/^maxConnections: 1024$/m, 'maxConnections: 30')
  t.not(valuesYaml, readFileSync(join(DEFAULT_CHART_DIR, 'values.yaml'), 'utf8'))
  const dir = chartWith({ 'values.yaml': valuesYaml })
  const r = await run(['lint', '--chart', dir])
  t.equal(r.code, 1)
  t.match(r.err, /\n {2}- minimal values \(size 1\), .*: values\.schema\.json: a rule refuses the spec over values\.yaml but not the spec \(a default the rule reads \(orValue\) is not the one values\.yaml gives\): spec\.maxConnections: must be at least 36, .* \(got 30\)\n/)
  const fine = await run(['lint'])
  t.equal(fine.code, 0, 'the bundled chart\'s rules read its own defaults')
})
