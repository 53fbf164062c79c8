! TorchFort's reinforcement-learning calls through `use torchfort`: every generic resolves for the arguments
! TorchFort's own programs pass (so such a program builds on ktr), and each call answers NOT_SUPPORTED.
program torchfort_rl_calls
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  use torchfort
  implicit none
  real(real32) :: state(4, 8), state_new(4, 8), act(2, 8), field(8, 8, 1), act1(2), reward, rewards(8), finals(8)
  real(real32) :: p_loss, q_loss
  logical :: ready
  integer :: failures, comm
  failures = 0
  state = 0; state_new = 0; act = 0; field = 0; act1 = 0; reward = 1; rewards = 1; finals = 0; comm = 0
  call expect(torchfort_rl_off_policy_create_system("sys", "rl.yaml", TORCHFORT_DEVICE_CPU, TORCHFORT_DEVICE_CPU))
  call expect(torchfort_rl_off_policy_create_distributed_system("sys", "rl.yaml", comm, 0, 0))
  call expect(torchfort_rl_off_policy_update_replay_buffer("sys", state, act, state_new, reward, .false.))
  call expect(torchfort_rl_off_policy_update_replay_buffer("sys", field, act1, field, reward, .true., 0_int64))
  call expect(torchfort_rl_off_policy_update_replay_buffer("sys", state, act, state_new, rewards, finals))
  call expect(torchfort_rl_off_policy_train_step("sys", p_loss, q_loss))
  call expect(torchfort_rl_off_policy_predict_explore("sys", state, act))
  call expect(torchfort_rl_off_policy_predict("sys", state, act))
  call expect(torchfort_rl_off_policy_evaluate("sys", state, act, rewards))
  call expect(torchfort_rl_off_policy_is_ready("sys", ready))
  call expect(torchfort_rl_off_policy_save_checkpoint("sys", "ckpt"))
  call expect(torchfort_rl_off_policy_load_checkpoint("sys", "ckpt"))
  call expect(torchfort_rl_off_policy_load_model("sys", "ckpt"))
  call expect(torchfort_rl_off_policy_wandb_log("sys", "reward", 1_int64, 0.5_real32))
  call expect(torchfort_rl_off_policy_wandb_log("sys", "reward", 1_int32, 0.5_real64))
  call expect(torchfort_rl_off_policy_wandb_log("sys", "episode", 1_int64, 3_int32))
  call expect(torchfort_rl_on_policy_create_system("ppo", "ppo.yaml", TORCHFORT_DEVICE_CPU, TORCHFORT_DEVICE_CPU))
  call expect(torchfort_rl_on_policy_create_distributed_system("ppo", "ppo.yaml", comm, 0, 0))
  call expect(torchfort_rl_on_policy_update_rollout_buffer("ppo", state, act, reward, .false.))
  call expect(torchfort_rl_on_policy_update_rollout_buffer("ppo", state, act, rewards, finals))
  call expect(torchfort_rl_on_policy_reset_rollout_buffer("ppo"))
  call expect(torchfort_rl_on_policy_train_step("ppo", p_loss, q_loss, 0_int64))
  call expect(torchfort_rl_on_policy_predict_explore("ppo", state, act))
  call expect(torchfort_rl_on_policy_predict("ppo", state, act))
  call expect(torchfort_rl_on_policy_evaluate("ppo", state, act, rewards))
  call expect(torchfort_rl_on_policy_is_ready("ppo", ready))
  call expect(torchfort_rl_on_policy_save_checkpoint("ppo", "ckpt"))
  call expect(torchfort_rl_on_policy_load_checkpoint("ppo", "ckpt"))
  call expect(torchfort_rl_on_policy_load_model("ppo", "ckpt"))
  call expect(torchfort_rl_on_policy_wandb_log("ppo", "reward", 2_int64, 0.25_real64))
  if (failures /= 0) then
    print '(i0, a)', failures, ' torchfort_rl_* calls did not answer TORCHFORT_RESULT_NOT_SUPPORTED'
    error stop 1
  end if
  print '(a)', 'every torchfort_rl_* call answered TORCHFORT_RESULT_NOT_SUPPORTED'
contains
  subroutine expect(istat)
    integer, intent(in) :: istat
    if (istat /= TORCHFORT_RESULT_NOT_SUPPORTED) failures = failures + 1
  end subroutine
end program
