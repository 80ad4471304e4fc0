/**
 * Golden renders of the samples, and of the classic sample with each of the chart's example
 * values files (charts/memcached/ci, one chart feature each, which lint renders too:
 * `ci/<feature>-values.yaml` renders into test/golden/features/`<feature>.yaml`). After an intended change to the chart, regenerate them with `npm run golden`
 * and review the diff.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { SAMPLES_DIR } from '../operator/cli/lint.ts'
import { DEFAULT_CHART_DIR } from '../operator/render/chart.ts'
import { captureIO } from './support/io.ts'

const goldenDir = join(import.meta.dirname, 'golden')
const update = process.env.UPDATE_GOLDEN === '1'
const samples = readdirSync(SAMPLES_DIR).filter((f) => f.startsWith('cache_') && f.endsWith('.yaml')).sort()

t.test('there are samples, including the classic size: 3 one', async (t) => {
  t.ok(samples.includes('cache_v1alpha1_memcached.yaml'))
  t.match(readFileSync(join(SAMPLES_DIR, 'cache_v1alpha1_memcached.yaml'), 'utf8'), /size: 3/)
})

for (const sample of samples) {
  t.test(`golden render of ${sample}`, async (t) => {
    const io = captureIO()
    t.equal(await runCli(['render', '-f', join(SAMPLES_DIR, sample)], io), 0, io.err())
    const golden = join(goldenDir, sample)
    if (update) writeFileSync(golden, io.out())
    t.ok(existsSync(golden), `${golden} exists (npm run golden writes it)`)
    t.equal(io.out(), readFileSync(golden, 'utf8'), 'matches the golden file')
  })
}

const featuresDir = join(goldenDir, 'features')
const ciDir = join(DEFAULT_CHART_DIR, 'ci')
const features = readdirSync(ciDir).filter((f) => f.endsWith('-values.yaml')).sort()

t.test('there is a feature values file for each part of the chart beyond the classic sample', async (t) => {
  t.same(features, ['auth-authfile', 'auth-sasl', 'extstore-claims', 'extstore-ephemeral', 'extstore', 'metrics', 'network-policy', 'rollout', 'statefulset', 'tls-cert-manager', 'tls-secret'].map((f) => `${f}-values.yaml`))
})

for (const values of features) {
  t.test(`golden render of the classic sample with ci/${values}`, async (t) => {
    const io = captureIO()
    t.equal(await runCli(['render', '-f', join(SAMPLES_DIR, 'cache_v1alpha1_memcached.yaml'), '--values', join(ciDir, values)], io), 0, io.err())
    const golden = join(featuresDir, values.replace(/-values\.yaml$/, '.yaml'))
    if (update) writeFileSync(golden, io.out())
    t.ok(existsSync(golden), `${golden} exists (npm run golden writes it)`)
    t.equal(io.out(), readFileSync(golden, 'utf8'), 'matches the golden file')
  })
}

t.test('rendering the same CR twice gives byte-identical output', async (t) => {
  const first = captureIO()
  const second = captureIO()
  const args = ['render', '-f', join(SAMPLES_DIR, 'cache_v1alpha1_memcached_tuned.yaml')]
  await runCli(args, first)
  await runCli(args, second)
  t.ok(first.out().length > 0)
  t.equal(second.out(), first.out())
})
