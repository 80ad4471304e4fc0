/**
 * The flags `helm template` users reach for: `--show-only`, `--output-dir`, `--set-json` and
 * `--set-file`, with Helm's precedence (values files < --set-json < --set < --set-string < --set-file).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { runCli } from '../operator/cli/program.ts'
import { captureIO } from './support/io.ts'
import { tempDir } from './support/tmp.ts'

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
