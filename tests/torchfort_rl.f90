! TorchFort's reinforcement-learning calls through `use torchfort`: every generic resolves for the arguments
! TorchFort's own programs pass (so such a program builds on ktr). The off-policy calls ktr has train a TD3 system
! of TorchFort's test configuration (argument 1) on its constant reward, in TorchFort's calling pattern, to its pass
! criterion (mean |Q - 1| below 1e-2), real32 and real64 alike, save and load it, log metrics; the rest answer NOT_SUPPORTED.
program torchfort_rl_calls
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  use torchfort
  implicit none
  real(real32) :: state(4, 8), state_new(4, 8), act(2, 8), field(8, 8, 1), act1(2), reward, rewards(8), finals(8)
  real(real32) :: p_loss, q_loss, s(1, 1), a(1, 1), q(1), r, qdiff
  real(real64) :: s64(1, 1), a64(1, 1), q64(1), r64
  real(real32) :: state1(1, 8), act8(1, 8)
  logical :: ready
  integer :: failures, comm, it, steps
  real :: tol
  character(len=512) :: config, arg
  failures = 0
  state = 0; state_new = 0; act = 0; field = 0; act1 = 0; reward = 1; rewards = 1; finals = 0; comm = 0
  call get_command_argument(1, config)
  ! Arguments 2 and 3 (sanitizer builds): fewer exploring steps and a looser tolerance than TorchFort's 20000, 1e-2.
  steps = 20000; tol = 1e-2
  call get_command_argument(2, arg)
  if (len_trim(arg) > 0) read (arg, *) steps
  call get_command_argument(3, arg)
  if (len_trim(arg) > 0) read (arg, *) tol

  ! TorchFort's loop on the constant reward: explore, push, train when ready, evaluate.
  call expect(torchfort_rl_off_policy_create_system("td3", trim(config), TORCHFORT_DEVICE_CPU, &
                                                    TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS)
  s = 0; r = 1; qdiff = 0
  do it = 1, steps + 100
    if (it <= steps) then
      call expect(torchfort_rl_off_policy_predict_explore("td3", s, a), TORCHFORT_RESULT_SUCCESS)
      call expect(torchfort_rl_off_policy_update_replay_buffer("td3", s(:, 1), a(:, 1), s(:, 1), r, .true.), &
                  TORCHFORT_RESULT_SUCCESS)
      call expect(torchfort_rl_off_policy_is_ready("td3", ready), TORCHFORT_RESULT_SUCCESS)
      if (ready) call expect(torchfort_rl_off_policy_train_step("td3", p_loss, q_loss), TORCHFORT_RESULT_SUCCESS)
    else
      call expect(torchfort_rl_off_policy_predict("td3", s, a), TORCHFORT_RESULT_SUCCESS)
      call expect(torchfort_rl_off_policy_evaluate("td3", s, a, q), TORCHFORT_RESULT_SUCCESS)
      qdiff = qdiff + abs(q(1) - 1) / 100
    end if
  end do
  if (.not. (qdiff < tol)) then
    print '(a, g0)', 'TD3 on the constant reward: mean |Q - 1| = ', qdiff
    failures = failures + 1
  end if
  ! real64 arrays, and a push that may not be stored: a transition's shape must be the system's.
  s64 = 0; a64 = 0.5d0; r64 = 1
  call expect(torchfort_rl_off_policy_predict("TD3", s64, a64), TORCHFORT_RESULT_SUCCESS)
  call expect(torchfort_rl_off_policy_evaluate("td3", s64, a64, q64), TORCHFORT_RESULT_SUCCESS)
  if (abs(q64(1) - 1) > max(0.05d0, dble(tol))) failures = failures + 1
  call expect(torchfort_rl_off_policy_update_replay_buffer("td3", s64(:, 1), a64(:, 1), s64(:, 1), r64, .false.), &
              TORCHFORT_RESULT_SUCCESS)
  call expect(torchfort_rl_off_policy_update_replay_buffer("td3", field, act1, field, reward, .true., 0_int64), &
              TORCHFORT_RESULT_INVALID_USAGE)
  ! Eight environments per slot (n_envs: 8): states and actions (features, n_envs), rewards and flags (n_envs).
  call expect(torchfort_rl_off_policy_create_system("td3_8", trim(config) // ".n_envs8.yaml", &
                                                    TORCHFORT_DEVICE_CPU, TORCHFORT_DEVICE_CPU), &
              TORCHFORT_RESULT_SUCCESS)
  state1 = 0.25; act8 = 0
  call expect(torchfort_rl_off_policy_predict_explore("td3_8", state1, act8), TORCHFORT_RESULT_SUCCESS)
  do it = 1, 80
    call expect(torchfort_rl_off_policy_update_replay_buffer("td3_8", state1, act8, state1, rewards, finals), &
                TORCHFORT_RESULT_SUCCESS)
  end do
  call expect(torchfort_rl_off_policy_is_ready("td3_8", ready), TORCHFORT_RESULT_SUCCESS)
  if (.not. ready) failures = failures + 1
  call expect(torchfort_rl_off_policy_train_step("td3_8", p_loss, q_loss), TORCHFORT_RESULT_SUCCESS)
  call expect(torchfort_rl_off_policy_update_replay_buffer("td3_8", state1(:, 1:4), act8(:, 1:4), state1(:, 1:4), &
                                                           rewards(1:4), finals(1:4)), TORCHFORT_RESULT_INVALID_USAGE)

  ! A checkpoint of the trained system, loaded whole and as its networks only (into the build folder).
  call expect(torchfort_rl_off_policy_save_checkpoint("td3", "torchfort_rl_fortran_ckpt"), TORCHFORT_RESULT_SUCCESS)
  call expect(torchfort_rl_off_policy_load_checkpoint("td3", "torchfort_rl_fortran_ckpt"), TORCHFORT_RESULT_SUCCESS)
  call expect(torchfort_rl_off_policy_load_model("td3", "torchfort_rl_fortran_ckpt"), TORCHFORT_RESULT_SUCCESS)
  call expect(torchfort_rl_off_policy_evaluate("td3", s64, a64, q64), TORCHFORT_RESULT_SUCCESS)
  if (abs(q64(1) - 1) > max(0.05d0, dble(tol))) failures = failures + 1

  ! Metric lines: the system's file has no enable_wandb_hook, so they log nothing and succeed; no system, refused.
  call expect(torchfort_rl_off_policy_wandb_log("td3", "reward", 1_int64, 0.5_real32), TORCHFORT_RESULT_SUCCESS)
  call expect(torchfort_rl_off_policy_wandb_log("td3", "reward", 1_int32, 0.5_real64), TORCHFORT_RESULT_SUCCESS)
  call expect(torchfort_rl_off_policy_wandb_log("td3", "episode", 1_int64, 3_int32), TORCHFORT_RESULT_SUCCESS)
  call expect(torchfort_rl_off_policy_wandb_log("nobody", "reward", 1_int64, 0.5_real64), &
              TORCHFORT_RESULT_INVALID_USAGE)

  ! A distributed system needs an MPI build (this test's is not); then what ktr has not built yet.
  call expect(torchfort_rl_off_policy_create_distributed_system("sys", "rl.yaml", comm, 0, 0), &
              TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_create_system("ppo", "ppo.yaml", TORCHFORT_DEVICE_CPU, TORCHFORT_DEVICE_CPU), &
              TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_create_distributed_system("ppo", "ppo.yaml", comm, 0, 0), &
              TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_update_rollout_buffer("ppo", state, act, reward, .false.), &
              TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_update_rollout_buffer("ppo", state, act, rewards, finals), &
              TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_reset_rollout_buffer("ppo"), TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_train_step("ppo", p_loss, q_loss, 0_int64), TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_predict_explore("ppo", state, act), TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_predict("ppo", state, act), TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_evaluate("ppo", state, act, rewards), TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_is_ready("ppo", ready), TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_save_checkpoint("ppo", "ckpt"), TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_load_checkpoint("ppo", "ckpt"), TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_load_model("ppo", "ckpt"), TORCHFORT_RESULT_NOT_SUPPORTED)
  call expect(torchfort_rl_on_policy_wandb_log("ppo", "reward", 2_int64, 0.25_real64), TORCHFORT_RESULT_NOT_SUPPORTED)
  if (failures /= 0) then
    print '(i0, a)', failures, ' torchfort_rl_* checks failed'
    error stop 1
  end if
  print '(a)', 'torchfort_rl_* from Fortran: TD3 trained, the rest answered TORCHFORT_RESULT_NOT_SUPPORTED'
contains
  subroutine expect(istat, wanted)
    integer, intent(in) :: istat, wanted
    if (istat /= wanted) then
      failures = failures + 1
      print '(a, i0, a, i0)', 'a call answered ', istat, ', not ', wanted
    end if
  end subroutine
end program
