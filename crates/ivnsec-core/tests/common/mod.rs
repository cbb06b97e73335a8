pub mod replay_model;
