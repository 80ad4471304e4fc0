/**
 * `lint --chart COPY` checks a copy of the chart on the same instances as the bundled chart: the
 * chart's own example values (ci/*.yaml, as chart-testing reads a Helm chart's), plus `--values`
 * files; a template that never ends stops lint, naming it.
 */
import { join, resolve } from 'node:path'
import t from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { tempDir } from './support/tmp.ts'
import { writeFileSync } from 'node:fs'

const root = resolve(import.meta.dirname, '..')

async function run(args: string[]) {
  const io = captureIO()
  const code = await runCli(args, io)
  return { code, out: io.out(), err: io.err() }
}

const counts = (out: string) => /ok \(\d+ templates, \d+ kinds, (\d+ instances rendered into \d+ objects)/.exec(out)?.[1]

t.test('lint on a copy of the chart renders what it renders on the bundled chart', async (t) => {
  const bundled = await run(['lint'])
  const copy = await run(['lint', '--chart', chartWith({})])
  t.equal(bundled.code, 0, bundled.err)
  t.equal(copy.code, 0, copy.err)
  t.ok(counts(bundled.out))
  t.equal(counts(copy.out), counts(bundled.out), 'the same instances and objects')
  t.match(copy.out, /minimal values \(also on openshift\), 11 ci\/ values files\)/, 'a copy carries its platform files too')
})

t.test('lint finds what only a feature\'s values break, in a copy; names the ci/ file or --values file', async (t) => {
  // A template change that breaks the StatefulSet only.
  const broken = chartWith({ 'ci/statefulset-values.yaml': 'workload:\n  kind: StatefulSet\n  podManagementPolicy: Sometimes\n' })
  const r = await run(['lint', '--chart', broken])
  t.equal(r.code, 1)
  t.match(r.err, /ci\/statefulset-values\.yaml: spec\.workload\.podManagementPolicy: must be one of "Parallel", "OrderedReady" \(got "Sometimes"\)/)
  const values = join(tempDir('mc-lint-'), 'mine.yaml')
  writeFileSync(values, 'size: -1\n')
  const given = await run(['lint', '--values', values])
  t.equal(given.code, 1)
  t.match(given.err, /mine\.yaml: spec\.size: must be >= 0/)
  writeFileSync(values, 'metrics: {enabled: true}\n')
  const ok = await run(['lint', '--values', values, '-f', join(root, 'kustomize/samples/cache_v1alpha1_memcached_tuned.yaml')])
  t.equal(ok.code, 0, ok.err)
  t.match(ok.out, /16 instances rendered into \d+ objects: minimal values \(also on openshift\), 11 ci\/ values files, 1 --values, the CRs of 1 -f\)/)
})

t.test('a template that never ends stops lint, naming the instance and the template', async (t) => {
  const chart = chartWith({ 'templates/configmap-loop.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n<% while (true) {} %>\n' })
  const r = await run(['lint', '--chart', chart])
  t.equal(r.code, 1)
  t.match(r.err, /minimal values \(size 1\): templates\/configmap-loop\.ejs: did not finish within 10 s/)
})
