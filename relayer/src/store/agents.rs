//! ERC-8004 agents the relayer registers for owners: prepared, registered, handed over.

use alloy_primitives::{Address, U256};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{parsed, parsed_opt, DbTx, Store, StoreError, TxStatus};

/// An agent the relayer registers, with its transactions' progress.
#[derive(Clone, Debug)]
pub struct AgentRow {
    /// `agt_…`.
    pub id: String,
    /// The host that asked.
    pub host_id: String,
    /// Who will hold it.
    pub owner: Address,
    /// The registration file the owner consented to, JSON.
    pub registration: String,
    /// When the owner's consent lapses (unix seconds).
    pub deadline: i64,
    /// The relayer signer that registers it and hands it over.
    pub signer: Option<Address>,
    /// `register(agentURI)`.
    pub register_transaction: Option<i64>,
    /// Its status.
    pub register_status: Option<TxStatus>,
    /// The ERC-8004 id, once registered.
    pub agent_id: Option<U256>,
    /// `transferFrom(signer, owner, agentId)`.
    pub transfer_transaction: Option<i64>,
    /// Its status.
    pub transfer_status: Option<TxStatus>,
    /// How many hand-overs were sent.
    pub handover_attempts: i64,
    /// When the owner held it (unix ms).
    pub registered_at: Option<i64>,
    /// Why it failed.
    pub error_code: Option<String>,
    /// Its arguments, JSON.
    pub error_details: Option<String>,
    /// When it was prepared (unix ms).
    pub created_at: i64,
}

/// An agent to prepare.
pub struct NewAgent<'a> {
    /// `agt_…`.
    pub id: &'a str,
    /// The host that asks.
    pub host_id: &'a str,
    /// Who will hold it.
    pub owner: Address,
    /// The registration file, JSON.
    pub registration: &'a str,
    /// When the owner's consent lapses (unix seconds).
    pub deadline: i64,
}

const AGENT_COLUMNS: &str = "a.id, a.host_id, a.owner, a.registration, a.deadline, a.signer, \
    a.register_transaction, r.status AS register_status, a.agent_id, a.transfer_transaction, \
    t.status AS transfer_status, a.handover_attempts, a.registered_at, a.error_code, \
    a.error_details, a.created_at";

const AGENT_FROM: &str = "FROM agents a \
    LEFT JOIN transactions r ON r.id = a.register_transaction \
    LEFT JOIN transactions t ON t.id = a.transfer_transaction";

fn status(r: &AnyRow, name: &str) -> Result<Option<TxStatus>, StoreError> {
    r.try_get::<Option<String>, _>(name)?
        .map(|s| TxStatus::parse(&s))
        .transpose()
}

fn agent_row(r: &AnyRow) -> Result<AgentRow, StoreError> {
    Ok(AgentRow {
        id: r.try_get("id")?,
        host_id: r.try_get("host_id")?,
        owner: parsed(r, "owner")?,
        registration: r.try_get("registration")?,
        deadline: r.try_get("deadline")?,
        signer: parsed_opt(r, "signer")?,
        register_transaction: r.try_get("register_transaction")?,
        register_status: status(r, "register_status")?,
        agent_id: parsed_opt(r, "agent_id")?,
        transfer_transaction: r.try_get("transfer_transaction")?,
        transfer_status: status(r, "transfer_status")?,
        handover_attempts: r.try_get::<i64, _>("handover_attempts")?,
        registered_at: r.try_get("registered_at")?,
        error_code: r.try_get("error_code")?,
        error_details: r.try_get("error_details")?,
        created_at: r.try_get("created_at")?,
    })
}

impl Store {
    /// Stores a prepared agent.
    pub async fn insert_agent(&self, a: &NewAgent<'_>, now: i64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO agents (id, host_id, owner, registration, deadline, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(a.id)
        .bind(a.host_id)
        .bind(format!("{:#x}", a.owner))
        .bind(a.registration)
        .bind(a.deadline)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Agent `id`, of host `host_id` when given.
    pub async fn agent(
        &self,
        id: &str,
        host_id: Option<&str>,
    ) -> Result<Option<AgentRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {AGENT_COLUMNS} {AGENT_FROM} \
             WHERE a.id = $1 AND ($2 IS NULL OR a.host_id = $2)"
        ))
        .bind(id)
        .bind(host_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(agent_row).transpose()
    }

    /// Names the registration's transaction, inside `db`, unless another request did first;
    /// answers whether this one did.
    pub async fn set_agent_registering(
        db: &mut DbTx,
        id: &str,
        signer: Address,
        transaction: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE agents SET signer = $1, register_transaction = $2 \
             WHERE id = $3 AND register_transaction IS NULL",
        )
        .bind(format!("{signer:#x}"))
        .bind(transaction)
        .bind(id)
        .execute(&mut **db)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Agents whose registration or hand-over is mined or failed and not yet read.
    pub async fn unsettled_agents(&self, limit: i64) -> Result<Vec<AgentRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {AGENT_COLUMNS} {AGENT_FROM} \
             WHERE a.error_code IS NULL AND a.registered_at IS NULL AND ( \
               (a.agent_id IS NULL AND r.status IN ('mined', 'confirmed', 'failed')) \
               OR t.status IN ('mined', 'confirmed', 'failed')) \
             ORDER BY a.created_at LIMIT $1"
        ))
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(agent_row).collect()
    }

    /// Records the agent's id and its (next) hand-over's transaction, inside `db`.
    pub async fn set_agent_handover(
        db: &mut DbTx,
        id: &str,
        agent_id: U256,
        transfer: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE agents SET agent_id = $1, transfer_transaction = $2, \
             handover_attempts = handover_attempts + 1 \
             WHERE id = $3 AND (agent_id IS NULL OR agent_id = $1)",
        )
        .bind(agent_id.to_string())
        .bind(transfer)
        .bind(id)
        .execute(&mut **db)
        .await?;
        Ok(())
    }

    /// Records that the owner holds the agent, or why it failed.
    pub async fn set_agent_outcome(
        &self,
        id: &str,
        registered_at: Option<i64>,
        error: Option<(&str, &str)>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE agents SET registered_at = $1, error_code = $2, error_details = $3 \
             WHERE id = $4",
        )
        .bind(registered_at)
        .bind(error.map(|e| e.0))
        .bind(error.map(|e| e.1))
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
