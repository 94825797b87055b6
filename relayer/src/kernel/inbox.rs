//! The way from the handlers that accept payments to the one task that stores them
//! (`payments::queue`): a payment the contracts' rules allow now, and the answer once stored.

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::SolStruct;
use bursar_bindings::eip712::{PaymentIntent, SESSION_WALLET_DOMAIN};
use bursar_bindings::wallet::ISessionWallet;
use bursar_client::Key;
use tokio::sync::{mpsc, oneshot};

use super::Error;
use crate::store::{PaymentRow, SessionRow};

/// Payments waiting for the queue task at most; a handler past this waits its turn.
const CAPACITY: usize = 4_096;

/// Who signs a payment's intent.
pub(crate) enum IntentSigner {
    /// The relayer, with the custodial session key, under the session's next intent nonce.
    Custodial(Key),
    /// The sandbox did, under the intent's own nonce.
    Sandbox(Bytes),
}

/// A payment the contracts' rules allow now, waiting to be checked against its session's
/// queued payments and stored.
pub(crate) struct Accepted {
    /// Its session.
    pub session: SessionRow,
    /// The intent (a custodial one's nonce is taken when it is stored).
    pub intent: PaymentIntent,
    /// Who signs the intent.
    pub signer: IntentSigner,
    /// Whether the simulation executed it (rather than making it pending).
    pub executes: bool,
    /// The relayer signer the session is pinned to, which sends the transaction.
    pub sender: Address,
    /// The transaction's gas limit.
    pub gas: u64,
    /// The request's idempotency key, if it had one.
    pub request_key: Option<String>,
}

impl Accepted {
    /// The wallet's `pay` of this intent under `nonce`, signed.
    pub(crate) fn pay_call(
        &self,
        nonce: U256,
        wallet: Address,
        chain_id: u64,
    ) -> ISessionWallet::payCall {
        let intent = PaymentIntent {
            nonce,
            ..self.intent.clone()
        };
        let signature = match &self.signer {
            IntentSigner::Custodial(key) => {
                let domain = SESSION_WALLET_DOMAIN.at(chain_id, wallet);
                key.sign_hash_rsv(&intent.eip712_signing_hash(&domain))
                    .into()
            }
            IntentSigner::Sandbox(signature) => signature.clone(),
        };
        intent.pay_call(signature)
    }

    /// Whether the relayer signs it.
    pub(crate) fn custodial(&self) -> bool {
        matches!(self.signer, IntentSigner::Custodial(_))
    }
}

/// Where the queue task answers a payment: its stored row, or why it was refused.
pub(crate) type Reply = oneshot::Sender<Result<PaymentRow, Error>>;

/// The way into the queue task.
pub(crate) struct Queue(mpsc::Sender<(Accepted, Reply)>);

/// The queue task's end of [`Queue`].
pub(crate) struct Receiver(pub(crate) mpsc::Receiver<(Accepted, Reply)>);

impl Queue {
    /// A queue and the receiver its task takes.
    pub(crate) fn new() -> (Queue, Receiver) {
        let (tx, rx) = mpsc::channel(CAPACITY);
        (Queue(tx), Receiver(rx))
    }

    /// Queues `payment`; answers once it is stored (or refused).
    pub(crate) async fn push(&self, payment: Accepted) -> Result<PaymentRow, Error> {
        let (reply, answer) = oneshot::channel();
        // The task is gone only when the relayer is stopping: nothing was stored.
        self.0
            .send((payment, reply))
            .await
            .map_err(|_| Error::Unavailable)?;
        answer.await.map_err(|_| Error::Unavailable)?
    }
}
