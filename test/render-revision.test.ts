/** Chart revisions as data: digest, name, size limit, loading from an object, the default's choice, the operator's spec fields. */
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import { chartValuesOf, OPERATOR_SPEC_FIELDS } from '../operator/render/spec-fields.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { runCli } from '../operator/cli/program.ts'
import { chartDigest, chartFromFiles, loadChart, readChartFiles } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { chartOfRevision, MAX_REVISION_BYTES, revisionName, revisionObject } from '../operator/api/chart-revision.ts'
import { defaultOf } from '../operator/reconcile/revision.ts'
import { chartWith, failure } from './support/chart.ts'
import { captureIO } from './support/io.ts'

const own = loadChart()

t.test('a chart\'s digest is of its files only: the same files anywhere give the same revision', async (t) => {
  const copy = chartWith({ 'README.md': 'not part of the chart\n' })
  const again = chartFromFiles(readChartFiles(copy), copy)
  t.equal(again.digest, own.digest, 'a file outside the chart\'s set changes nothing')
  t.equal(revisionName(again), revisionName(own))
  t.match(revisionName(own), /^memcached-[0-9a-f]{12}$/)
  const edited = chartWith({ 'templates/service.ejs': `${readChartFiles(own.dir).get('templates/service.ejs')!}# edited\n` })
  t.not(chartFromFiles(readChartFiles(edited), edited).digest, own.digest, 'a template edited is another revision')
  t.not(chartDigest(new Map([['a', 'bc']])), chartDigest(new Map([['ab', 'c']])), 'paths and texts do not run into each other')
})

t.test('a revision object loads back into the same chart, and renders the same', async (t) => {
  const object = revisionObject(own)
  t.equal(object.metadata.name, revisionName(own))
  const loaded = chartOfRevision(JSON.parse(JSON.stringify(object)))
  t.equal(loaded.digest, own.digest)
  t.equal(loaded.dir, `ChartRevision ${revisionName(own)}`)
  const input = { name: 'x', namespace: 'default', spec: { size: 2 } }
  t.same(renderInstance(loaded, input).objects, renderInstance(own, input).objects)
  t.equal(chartOfRevision(JSON.parse(JSON.stringify(object))), loaded, 'loaded once per digest')
})

t.test('a chart larger than an object may be is refused, naming its largest files', async (t) => {
  const big = chartWith({ 'templates/big.ejs': `# ${'x'.repeat(MAX_REVISION_BYTES)}\n` })
  const err = failure(() => revisionObject(chartFromFiles(readChartFiles(big), big)))
  t.match(err.message, /its revision would be 16\d\d\.\d KiB, over the 1536\.0 KiB an object may have \(etcd's request limit\); the largest files: templates\/big\.ejs \(1536\.0 KiB\)/)
  const io = captureIO()
  t.equal(await runCli(['chart', 'push', big, '--kubeconfig', '/nonexistent'], io), 1, 'chart push refuses it before asking any cluster')
  t.match(io.err(), /over the 1536\.0 KiB an object may have/)
})

t.test('a revision object with files missing or not text is refused with its name', async (t) => {
  const object = revisionObject(own)
  t.match(failure(() => chartOfRevision({ ...object, spec: { ...object.spec, files: { 'Chart.yaml': 3 } } })).message, `ChartRevision ${object.metadata.name}: spec.files must map each file of the chart to its text`)
  const files = { ...(object.spec!.files as Record<string, string>) }
  delete files['kinds.yaml']
  t.match(failure(() => chartOfRevision({ ...object, spec: { ...object.spec, files } })).message, /its files hash to sha256:/)
})

t.test('the default revision: the labelled one; of several, the one promoted last; a tie is an error', async (t) => {
  const rev = (name: string, labelled: boolean, at?: string) => ({ apiVersion: 'cache.example.com/v1alpha1', kind: 'ChartRevision', metadata: { name, labels: labelled ? { 'cache.example.com/default': 'true' } : {}, ...(at ? { annotations: { 'cache.example.com/promoted-at': at } } : {}) } }) as KubeObject
  t.equal(defaultOf([]), undefined)
  t.equal(defaultOf([rev('a', false), rev('b', true)]), 'b')
  t.equal(defaultOf([rev('a', true, '2026-01-01T00:00:00.000Z'), rev('b', true, '2026-01-02T00:00:00.000Z')]), 'b', 'mid-promotion, the newer one')
  t.match(failure(() => defaultOf([rev('a', true), rev('b', true)])).message, '2 ChartRevisions are labelled cache.example.com/default=true (a, b), none promoted after the others')
})

t.test('spec.chartRevision is the operator\'s: declared by the CRD, never a value of the chart', async (t) => {
  const crd = memcachedCRD(own) as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> }; status: { properties: Record<string, unknown> } } } } }[] } }
  const schema = crd.spec.versions[0]!.schema.openAPIV3Schema.properties
  t.same(schema.spec.properties.chartRevision, OPERATOR_SPEC_FIELDS.chartRevision)
  t.ok(schema.status.properties.chartRevision, 'status.chartRevision is declared')
  const spec = { size: 1, chartRevision: 'memcached-0123456789ab' }
  t.same(chartValuesOf(spec), { size: 1 })
  t.equal(chartValuesOf({ size: 1 }).size, 1)
  t.same(renderInstance(own, { name: 'x', namespace: 'default', spec }).objects, renderInstance(own, { name: 'x', namespace: 'default', spec: { size: 1 } }).objects, 'the pin does not reach the templates (nor fails the chart\'s schema)')
  const schemaText = readChartFiles(own.dir).get('values.schema.json')!
  const clash = chartWith({ 'values.schema.json': schemaText.replace('"properties": {', '"properties": {\n    "chartRevision": {"type": "string"},') })
  const io = captureIO()
  t.equal(await runCli(['lint', '--chart', clash], io), 1)
  t.match(io.err(), 'values.schema.json: properties.chartRevision: "chartRevision" is a field of the Memcached spec that the operator reads itself')
})
