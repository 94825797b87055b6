// SPDX-License-Identifier: MIT OR Apache-2.0
// The EVM suite the devnet is checked against anvil with (tests/it/evm_anvil.rs) and the
// Solidity side of the cross-world tests (tests/it/cross_world.rs). Compiled by the tests with
// the repository's solc-js (tools/solc), evmVersion cancun.
pragma solidity ^0.8.24;

contract Child {
    uint256 public v;

    constructor(uint256 x) payable {
        v = x;
    }

    function kill(address payable to) external {
        selfdestruct(to);
    }
}

contract Reverter {
    constructor() {
        revert("no constructor for you");
    }
}

contract Suite {
    uint256 public counter;
    mapping(uint256 => uint256) public map;
    bytes public blob;
    Child public lastChild;

    event Stored(uint256 indexed key, uint256 value);
    event Note(bytes data) anonymous;
    event Many(address indexed a, bytes32 indexed b, uint256 indexed c, string s);

    error Custom(uint256 code, string why);

    receive() external payable {}

    // ----- arithmetic, memory, calldata ------------------------------------------------------

    function arith(uint256 a, uint256 b) external pure returns (uint256, uint256, uint256, int256, uint256) {
        unchecked {
            uint256 d = b == 0 ? 1 : b;
            return (a + b, a * b, mulmod(a, b, d) ^ (a / d), int256(a) >> 3, addmod(a, b, d) + a ** 7);
        }
    }

    function checked(uint256 a, uint256 b) external pure returns (uint256) {
        return a + b; // Panic(0x11) on overflow
    }

    function hashLoop(uint256 n) external pure returns (bytes32 h) {
        bytes memory b = new bytes(n);
        for (uint256 i = 0; i < n; i++) {
            b[i] = bytes1(uint8(i));
        }
        h = keccak256(b);
    }

    function echo(bytes calldata data) external pure returns (bytes memory) {
        return bytes.concat(data, data);
    }

    function mcopy(uint256 n) external pure returns (bytes32 r) {
        assembly {
            mstore(0x100, 0x1122334455667788990011223344556677889900112233445566778899001122)
            mcopy(add(0x100, 7), 0x100, n)
            r := mload(0x100)
        }
    }

    // ----- storage, logs ---------------------------------------------------------------------

    function store(uint256 k, uint256 v) external {
        map[k] = v;
        emit Stored(k, v);
    }

    function clear(uint256 k) external {
        delete map[k];
    }

    function setResetSet(uint256 k) external {
        map[k] = 1;
        map[k] = 0;
        map[k] = 2;
    }

    function bump(uint256 n) external {
        for (uint256 i = 0; i < n; i++) {
            counter += 1;
        }
    }

    function readTwice(uint256 k) external view returns (uint256) {
        return map[k] + map[k];
    }

    function setBlob(bytes calldata b) external {
        blob = b;
        emit Note(b);
        emit Many(msg.sender, keccak256(b), b.length, "many topics");
    }

    // ----- reverts ---------------------------------------------------------------------------

    function revertReason(string calldata r) external pure {
        revert(r);
    }

    function revertCustom(uint256 c) external pure {
        revert Custom(c, "custom");
    }

    function outOfBounds(uint256 i) external pure returns (uint256) {
        uint256[] memory x = new uint256[](1);
        return x[i];
    }

    function invalidOp() external pure {
        assembly {
            invalid()
        }
    }

    function spin() external {
        while (true) {
            counter += 1;
        }
    }

    // ----- creation, self-destruct -----------------------------------------------------------

    function create(uint256 x) external payable returns (address) {
        lastChild = new Child{value: msg.value}(x);
        return address(lastChild);
    }

    function create2(bytes32 salt, uint256 x) external returns (address) {
        lastChild = new Child{salt: salt}(x);
        return address(lastChild);
    }

    function createReverting() external returns (bool ok, bytes memory data) {
        try new Reverter() returns (Reverter) {
            ok = true;
        } catch (bytes memory reason) {
            data = reason;
        }
    }

    /// EIP-6780: created and destroyed in one transaction, the child is gone.
    function createAndKill(uint256 x) external payable returns (address c) {
        Child child = new Child{value: msg.value}(x);
        child.kill(payable(address(this)));
        c = address(child);
    }

    /// Destroyed later: only its balance moves.
    function killLast() external {
        lastChild.kill(payable(address(this)));
    }

    function codeOf(address a) external view returns (uint256 size, bytes32 hash, bytes memory code) {
        return (a.code.length, a.codehash, a.code);
    }

    // ----- value, calls, transient storage ---------------------------------------------------

    function send(address payable to, uint256 amount) external {
        (bool ok,) = to.call{value: amount}("");
        require(ok, "send failed");
    }

    function deep(uint256 n) external returns (uint256) {
        if (n == 0) return 0;
        return this.deep(n - 1) + 1;
    }

    function tset(uint256 v) external {
        assembly {
            tstore(0, v)
        }
    }

    function tget() external view returns (uint256 r) {
        assembly {
            r := tload(0)
        }
    }

    /// Transient storage is per transaction: set here, read back through a call.
    function tsetThenGet(uint256 v) external returns (uint256) {
        this.tset(v);
        return this.tget();
    }

    function blobhash0() external view returns (bytes32 h, uint256 fee) {
        assembly {
            h := blobhash(0)
            fee := blobbasefee()
        }
    }

    function env() external view returns (uint256 chainId, uint256 gasLimit, address origin, uint256 balance) {
        return (block.chainid, gasleft() > 0 ? 1 : 0, tx.origin, address(this).balance);
    }

    // ----- precompiles -----------------------------------------------------------------------

    function precompile(address p, bytes calldata input) external view returns (bool ok, bytes memory out) {
        (ok, out) = p.staticcall(input);
    }

    function precompileWithGas(address p, bytes calldata input, uint256 gas)
        external
        view
        returns (bool ok, bytes memory out)
    {
        (ok, out) = p.staticcall{gas: gas}(input);
    }

    // ----- cross-world helpers ---------------------------------------------------------------

    uint256 public entered;

    /// Calls `target` with `data`; the callee's revert data bubbles up unchanged.
    function forward(address target, bytes calldata data) external payable returns (bytes memory out) {
        bool ok;
        (ok, out) = target.call{value: msg.value}(data);
        if (!ok) {
            assembly {
                revert(add(out, 32), mload(out))
            }
        }
    }

    function forwardStatic(address target, bytes calldata data) external view returns (bool ok, bytes memory out) {
        (ok, out) = target.staticcall(data);
    }

    function forwardDelegate(address target, bytes calldata data) external payable returns (bool ok, bytes memory out) {
        (ok, out) = target.delegatecall(data);
    }

    /// What the frame sees: for delegate calls, the caller's storage and value.
    function whoami() external payable returns (address sender, address self, uint256 value) {
        counter += 1;
        return (msg.sender, address(this), msg.value);
    }

    function callback() external returns (uint256) {
        entered += 1;
        return entered;
    }
}
