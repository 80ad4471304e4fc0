/**
 * The flags `helm template` users reach for: `--show-only`, `--output-dir`, `--set-json` and
 * `--set-file`, with Helm's precedence (values files < --set-json < --set < --set-string < --set-file).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import YAML, { parseAllDocuments } from 'yaml'
import { runCli } from '../operator/cli/program.ts'
import { mergeAll, parseSetJson, withReplacements, type Values } from '../operator/render/values.ts'
import { captureIO } from './support/io.ts'
import { tempDir } from './support/tmp.ts'
import { helmPath } from './support/tools.ts'

const root = resolve(import.meta.dirname, '..')
const sample = join(root, 'kustomize/samples/cache_v1alpha1_memcached.yaml')
type Obj = { kind: string; metadata: { name: string }; spec: { template: { spec: { tolerations?: unknown; containers: { args: string[] }[] } } } }
const docs = (yaml: string) => parseAllDocuments(yaml).map((d) => d.toJS() as Obj)

async function run(args: string[]) {
  const io = captureIO()
  const code = await runCli(args, io)
  return { code, out: io.out(), err: io.err() }
}

t.test('render --show-only prints the objects of the templates named', async (t) => {
  const r = await run(['render', '-f', sample, '--show-only', 'templates/deployment.ejs', '-s', 'memcached/templates/service.ejs'])
  t.equal(r.code, 0, r.err)
  t.same(docs(r.out).map((d) => d.kind), ['Service', 'Deployment'])
  const unknown = await run(['render', '-f', sample, '-s', 'templates/nope.ejs'])
  t.equal(unknown.code, 1)
  t.match(unknown.err, /--show-only templates\/nope\.ejs: the chart has no such template \(its templates: templates\/certificate\.ejs, /)
  const nothing = await run(['render', '-f', sample, '-s', 'templates/statefulset.ejs'])
  t.equal(nothing.code, 1)
  t.match(nothing.err, /--show-only: templates\/statefulset\.ejs rendered no object for these CRs/)
})

t.test('render --output-dir writes a file per CR and template, and says which', async (t) => {
  const dir = tempDir('mc-outdir-')
  const r = await run(['render', '-f', sample, '--output-dir', join(dir, 'out')])
  t.equal(r.code, 0, r.err)
  t.match(r.out, new RegExp(`^wrote ${dir}/out/default/memcached-sample/templates/service\\.yaml\\nwrote ${dir}/out/default/memcached-sample/templates/deployment\\.yaml\\n`))
  t.same(docs(readFileSync(join(dir, 'out/default/memcached-sample/templates/deployment.yaml'), 'utf8')).map((d) => d.kind), ['Deployment'])
  t.ok(existsSync(join(dir, 'out/default/memcached-sample/templates/poddisruptionbudget.yaml')))
})

t.test('render --set-json and --set-file, in Helm\'s order of precedence', async (t) => {
  const dir = tempDir('mc-setjson-')
  const r = await run(['render', '-f', sample, '-s', 'templates/deployment.ejs', '--set-json', 'tolerations=[{"key":"k","operator":"Exists"}]', '--set-json', 'memoryMB=100'])
  t.equal(r.code, 0, r.err)
  const dep = docs(r.out)[0]!
  t.same(dep.spec.template.spec.tolerations, [{ key: 'k', operator: 'Exists' }])
  t.match(dep.spec.template.spec.containers[0]!.args.join(' '), /-m 100/)
  const later = await run(['render', '-f', sample, '-s', 'templates/deployment.ejs', '--set-json', 'memoryMB=100', '--set', 'memoryMB=120'])
  t.match(docs(later.out)[0]!.spec.template.spec.containers[0]!.args.join(' '), /-m 120/, '--set wins over --set-json')
  const tag = join(dir, 'tag.txt')
  writeFileSync(tag, '1.6.39-alpine')
  const file = await run(['render', '-f', sample, '-s', 'templates/deployment.ejs', '--set-file', `image.tag=${tag}`, '--set', 'image.tag=x'])
  t.equal(file.code, 0, file.err)
  t.match(file.out, /image: memcached:1\.6\.39-alpine/, '--set-file wins over --set')
  const bad = await run(['render', '-f', sample, '--set-json', 'tolerations=[oops'])
  t.equal(bad.code, 1)
  t.match(bad.err, /--set-json tolerations: /)
  const missing = await run(['render', '-f', sample, '--set-file', `image.tag=${join(dir, 'none')}`])
  t.match(missing.err, /none: cannot read: no such file or directory \(ENOENT\)/)
  const noKey = await run(['render', '-f', sample, '--set-file', 'x'])
  t.match(noKey.err, /--set-file "x": expected key=path/)
})

// Helm's pkg/strvals/parser.go ParseJSON, run as the real helm runs it: a chart whose one template
// prints .Values as JSON, `helm template --set-json ARG`, against what render makes of the same ARG.
t.test('--set-json takes what helm template takes: several key=json pairs, one JSON value each, an empty value is null', async (t) => {
  const chartDir = join(tempDir('mc-helm-setjson-'), 'c')
  mkdirSync(join(chartDir, 'templates'), { recursive: true })
  writeFileSync(join(chartDir, 'Chart.yaml'), 'apiVersion: v2\nname: c\nversion: 0.1.0\n')
  writeFileSync(join(chartDir, 'templates', 'values.yaml'), 'values: {{ toJson .Values }}\n')
  const cases = ['a=1,b={"x":2}', 'tolerations=[{"key":"k,1","operator":"Exists"}],memoryMB=100', 'a=1b=2', 'a=,b=2', 'a.b=1,a={"c":2}', 'x[1]="s\\"q",y=null', 'a\\.b=true', 'l=[1, {"m":[2]}] , n="v"', 'a', 'a,b=1', 'a=[oops', 'a=tru', '=1']
  for (const arg of cases) {
    const helm = spawnSync(helmPath(), ['template', 'r', chartDir, '--set-json', arg], { encoding: 'utf8' })
    let ours: unknown
    try {
      ours = parseSetJson(arg)
    } catch (err) {
      ours = err as Error
    }
    if (helm.status !== 0) {
      t.ok(ours instanceof Error, `${arg}: helm refuses it (${helm.stderr.trim()}), and so does render: ${(ours as Error).message}`)
      continue
    }
    const theirs = JSON.parse(/^values: (.*)$/m.exec(helm.stdout)![1]!) as unknown
    t.same(JSON.parse(JSON.stringify(ours)), theirs, `${arg} → ${JSON.stringify(theirs)}`)
  }
  const r = await run(['render', '-f', sample, '-s', 'templates/deployment.ejs', '--set-json', 'tolerations=[{"key":"k","operator":"Exists"}],memoryMB=100'])
  t.equal(r.code, 0, r.err)
  t.same(docs(r.out)[0]!.spec.template.spec.tolerations, [{ key: 'k', operator: 'Exists' }], 'both keys of one flag reach the render')
  t.match(docs(r.out)[0]!.spec.template.spec.containers[0]!.args.join(' '), /-m 100/)
})

// pkg/cli/values/options.go MergeValues, run as the real helm runs it: values files merge, a
// `--set-json key=json` replaces what they hold at its key, a whole JSON object merges, and the
// chart's values.yaml merges beneath all of them.
t.test('--set-json over values files as helm template merges them: key=json replaces, a JSON object merges', async (t) => {
  const dir = tempDir('mc-helm-setjson-layers-')
  const chartDir = join(dir, 'c')
  mkdirSync(join(chartDir, 'templates'), { recursive: true })
  writeFileSync(join(chartDir, 'Chart.yaml'), 'apiVersion: v2\nname: c\nversion: 0.1.0\n')
  writeFileSync(join(chartDir, 'values.yaml'), 'a:\n  d: 0\nk: {p: 1}\n')
  writeFileSync(join(chartDir, 'templates', 'values.yaml'), 'values: {{ toJson .Values }}\n')
  const file = join(dir, 'v.yaml')
  writeFileSync(file, 'a:\n  x: 1\n  z: 2\nk: {q: 2}\n')
  const cases: string[][] = [['a={"x":3}'], ['a.x=3'], ['{"a":{"x":3}}'], ['a={"x":3}', 'a.w=4'], ['k={"r":3},a.x=5'], ['a=']]
  for (const args of cases) {
    const helm = spawnSync(helmPath(), ['template', 'r', chartDir, '-f', file, ...args.flatMap((a) => ['--set-json', a])], { encoding: 'utf8' })
    t.equal(helm.status, 0, helm.stderr)
    const theirs = JSON.parse(/^values: (.*)$/m.exec(helm.stdout)![1]!) as unknown
    const ours = mergeAll([YAML.parse('a:\n  d: 0\nk: {p: 1}\n') as Values, ...withReplacements([YAML.parse(readFileSync(file, 'utf8')) as Values, ...args.map(parseSetJson)])])
    t.same(JSON.parse(JSON.stringify(ours)), theirs, `-f v.yaml ${args.map((a) => `--set-json '${a}'`).join(' ')} → ${JSON.stringify(theirs)}`)
  }
  const values = join(dir, 'annotations.yaml')
  writeFileSync(values, 'podAnnotations: {x: "1", z: "2"}\n')
  const r = await run(['render', '-f', sample, '-s', 'templates/deployment.ejs', '--values', values, '--set-json', 'podAnnotations={"x":"3"}'])
  t.equal(r.code, 0, r.err)
  t.same((docs(r.out)[0]!.spec.template as unknown as { metadata: { annotations?: unknown } }).metadata.annotations, { x: '3' }, 'the values file\'s map is replaced, not merged')
})
