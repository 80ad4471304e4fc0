// Which Node.js runs the command line. Plain JavaScript that any node can load, so that an old node
// gets one line saying what to install instead of a stack trace from the TypeScript sources.

/** The oldest Node.js the project runs on: package.json's `engines.node` (a test holds them equal). */
export const requiredNode = '22.19'

/**
 * The line to print when `version` (as in `process.versions.node`) is older than `requiredNode`,
 * else undefined.
 * @param {string} version
 * @returns {string | undefined}
 */
export function nodeTooOld(version) {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  const [needMajor = 0, needMinor = 0] = requiredNode.split('.').map(Number)
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined
  return (
    `memcached-operator: Node.js >= ${requiredNode} is required, this is ${version}. ` +
    'Install Node 24 LTS (https://nodejs.org/en/download), or without root: ' +
    'npm install --prefix ~/.cache/node24 node@24 && export PATH=~/.cache/node24/node_modules/.bin:$PATH\n'
  )
}
