import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { ROOT } from './deploy-manifests.ts'
import { assemble, contextFiles, dockerignorePatterns, ignored, parseDockerfile } from './image/assemble.ts'

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> }
const instructions = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))
const patterns = dockerignorePatterns(readFileSync(join(ROOT, '.dockerignore'), 'utf8'))

t.test('the Dockerfile: multi-stage on Node 24, production dependencies from the lockfile, numeric non-root user, exec ENTRYPOINT with the shebang\'s flags', async (t) => {
  const froms = instructions.filter((i) => i.op === 'FROM').map((i) => i.args)
  t.ok(froms.length >= 2, 'multi-stage')
  for (const f of froms) t.match(f, /^(node:24[-.\w]*slim|gcr\.io\/distroless\/nodejs24-[\w.:-]+)@sha256:[0-9a-f]{64}(\s+AS\s+\w+)?$/i, `a small Node 24 base, pinned by digest: ${f}`)
  const runs = instructions.filter((i) => i.op === 'RUN').map((i) => i.args)
  t.ok(runs.some((r) => /\bnpm ci\b.*--omit=dev/.test(r)), 'npm ci --omit=dev')
  t.notOk(runs.some((r) => /\bnpm (i|install)\b/.test(r)), 'never npm install (it may change the lockfile)')
  const finalStage = instructions.slice(instructions.map((i) => i.op).lastIndexOf('FROM'))
  const user = finalStage.filter((i) => i.op === 'USER').pop()?.args ?? ''
  t.match(user, /^[1-9]\d*:[1-9]\d*$/, 'numeric uid:gid, not root')
  const entry = JSON.parse(finalStage.find((i) => i.op === 'ENTRYPOINT')!.args) as string[]
  const shebang = readFileSync(join(ROOT, 'operator/cli/main.js'), 'utf8').split('\n')[0]!
  const flags = shebang.replace(/^#!\/usr\/bin\/env -S node\s*/, '').split(/\s+/).filter(Boolean)
  t.ok(flags.length > 0, `the shebang passes flags to node: ${shebang}`)
  t.same(entry.slice(1, 1 + flags.length), flags, 'node gets the flags the executable\'s shebang gives it')
  t.same(entry.slice(1 + flags.length), ['/app/operator/cli/main.js', 'run'], 'and no other (--optimize-for-size made garbage collection a third of the operator\'s CPU)')
})

t.test('.dockerignore keeps tests, dev files and local state out of the context', async (t) => {
  for (const path of ['test/deploy-image.test.ts', 'test/golden/x.yaml', '.git/HEAD', 'node_modules/yaml/package.json', '.ci/run', '.tap/x', 'coverage/x', 'README.md', 'kustomize/default/kustomization.yaml', 'charts/memcached-operator/Chart.yaml', 'Dockerfile', 'tsconfig.json', '.taprc', 'operator/x.test.ts']) t.ok(ignored(patterns, path), `${path} excluded`)
  for (const path of ['package.json', 'package-lock.json', 'operator/cli/main.js', 'charts/memcached/values.yaml', 'kustomize/samples/kustomization.yaml']) t.notOk(ignored(patterns, path), `${path} included`)
  const files = contextFiles(ROOT, patterns)
  t.ok(files.includes('operator/cli/main.js'))
  t.notOk(files.some((f) => f.startsWith('test/') || f.startsWith('node_modules/')), 'the context of this checkout')
})

t.test('the assembler refuses what docker build refuses', async (t) => {
  const ctx = mkdtempSync(join(tmpdir(), 'mc-ctx-'))
  t.teardown(() => rmSync(ctx, { recursive: true, force: true }))
  mkdirSync(join(ctx, 'test'))
  writeFileSync(join(ctx, 'test', 'a.test.ts'), '')
  writeFileSync(join(ctx, '.dockerignore'), 'test\n')
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM node:24-slim\nCOPY test ./test\n')
  t.throws(() => assemble(join(ctx, 'out'), join(ctx, 'Dockerfile'), ctx), /Dockerfile:2: COPY test: not in the build context/)
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM node:24-slim\nADD https://example.com/x /x\n')
  t.throws(() => assemble(join(ctx, 'out2'), join(ctx, 'Dockerfile'), ctx), /ADD is not supported/)
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM node:24-slim\nENTRYPOINT node main.js\n')
  t.throws(() => assemble(join(ctx, 'out3'), join(ctx, 'Dockerfile'), ctx), /exec \(JSON\) form/)
})

t.test('the image tree: assembled as the Dockerfile says, production dependencies only, starts with nothing writable', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'mc-image-test-'))
  t.teardown(() => rmSync(out, { recursive: true, force: true }))
  const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, 'test/image/assemble.ts'), '--out', out], { cwd: ROOT, encoding: 'utf8' })
  t.match(stdout, new RegExp(`^version: ${pkg.version.replace(/\./g, '\\.')}$`, 'm'), '--version')
  t.match(stdout, /^run --help: Usage: memcached-operator run \[options\]$/m, 'run --help')
  t.match(stdout, /^lint: .*: ok \(/m, 'the chart and samples are in the image')
  t.match(stdout, /\nok\n$/)
  const app = join(out, 'stage-1', 'app')
  t.same(readdirSync(app).sort(), ['charts', 'kustomize', 'node_modules', 'operator', 'package.json'])
  t.same(readdirSync(join(app, 'kustomize')), ['samples'])
  t.same(readdirSync(join(app, 'charts')), ['memcached'], 'the chart it renders, not the Helm chart that installs it')
  for (const dep of Object.keys(pkg.dependencies)) t.ok(existsSync(join(app, 'node_modules', dep, 'package.json')), `dependency ${dep}`)
  // Only the lockfile's production packages (a devDependency may also be a production one's dependency, as @types/node is).
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> }
  const devOnly = Object.entries(lock.packages).filter(([path, p]) => path !== '' && p.dev === true).map(([path]) => path)
  t.ok(devOnly.length > 50, `${devOnly.length} dev-only packages in the lockfile`)
  t.same(devOnly.filter((path) => existsSync(join(app, path))), [], 'none of them in the image')
  for (const dep of ['tap', 'typescript', 'fast-check', '@aws-cdk/lambda-layer-kubectl-v34']) t.notOk(existsSync(join(app, 'node_modules', dep)), `no ${dep}`)
  const sources = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => !f.endsWith('.test.ts')).sort()
  t.same(sources(join(app, 'operator')), sources(join(ROOT, 'operator')), 'every source of operator/')
})
